"""The world behind the fake Bot API: chats, messages, files, the update queue, and users acting."""

from __future__ import annotations

import asyncio
import itertools
import mimetypes
import re
import secrets
import time
from typing import Any

from tests.fakes.telegram_checks import inspect_photo, is_photo
from tests.fakes.telegram_models import (
    ApiError,
    Chat,
    StoredFile,
    StoredMessage,
    User,
    bad_request,
)

# Telegram's photo thumbnails are fitted into these boxes; the original comes last.
_PHOTO_BOXES = (90, 320)
_CONFLICT = (
    "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
)
_COMMAND = re.compile(r"(?<![^\s])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{1,32})?(?![A-Za-z0-9_@])")


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def command_entities(text: str) -> list[dict[str, Any]]:
    """bot_command entities for every /command (incl. /command@bot) standing as a word."""
    return [
        {"type": "bot_command", "offset": utf16_len(text[: m.start()]), "length": utf16_len(m.group())}
        for m in _COMMAND.finditer(text)
    ]


class TelegramState:
    """Chats, messages, files and pending updates, shared by the HTTP methods and the test's users."""

    def __init__(self, bot: User) -> None:
        self.bot = bot
        self.chats: dict[int, Chat] = {}
        self.users: dict[int, User] = {}
        self.chat_admins: dict[int, set[int]] = {}
        self.messages: dict[int, dict[int, StoredMessage]] = {}
        self.files: dict[str, StoredFile] = {}
        self.files_by_path: dict[str, StoredFile] = {}
        self.photo_sets: dict[str, list[dict[str, Any]]] = {}  # any size's file_id -> all sizes
        self.documents: dict[str, dict[str, Any]] = {}  # file_id -> Document object
        self.updates: list[dict[str, Any]] = []
        self.queued: list[dict[str, Any]] = []  # every update ever queued, for a redelivery
        self.allowed_updates: frozenset[str] | None = None
        #: groups the bot is not a member of (guest mode summons it there): every method naming them is refused
        self.outside: set[int] = set()
        self.callback_queries: dict[str, dict[str, Any]] = {}
        #: chats whose admins turned reactions off: setMessageReaction answers REACTION_INVALID there
        self.reactions_off: set[int] = set()
        self.callback_answers: dict[str, dict[str, Any]] = {}
        self.stopping = False
        self._next_message_id: dict[int, int] = {}
        self._update_ids = itertools.count(800_000_001)
        self._file_numbers = itertools.count(1)
        self._media_group_ids = itertools.count(13_800_000_000_000_001)
        self._update_signal = asyncio.Event()
        self._poll_generation = 0

    # --- chats and messages -------------------------------------------------------------------

    def remember(self, chat: Chat, user: User | None) -> None:
        """Make a chat (and its writer) known, as Telegram knows chats a user wrote in."""
        known = self.chats.get(chat.id)
        if known is not None and known.type != chat.type:
            raise ValueError(f"chat {chat.id} is already known as a {known.type} chat")
        if known is None or chat.title or chat.first_name:
            self.chats[chat.id] = chat  # the fullest description wins; ids and types never change
        if user is not None:
            self.users[user.id] = user

    def require_chat(self, params: dict[str, Any]) -> Chat:
        """The chat named by chat_id, or Telegram's 400 for a missing or unknown one."""
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise bad_request("chat_id is empty")
        chat = self.chats.get(chat_id) if isinstance(chat_id, int) else None
        if chat is None:
            raise bad_request("chat not found")
        if chat.id in self.outside:
            raise ApiError(403, f"Forbidden: bot is not a member of the {chat.type} chat")
        return chat

    def message(self, chat_id: int, message_id: Any) -> StoredMessage | None:
        """A message that exists (not deleted) in the chat."""
        message = self.messages.get(chat_id, {}).get(message_id) if isinstance(message_id, int) else None
        return None if message is None or message.deleted else message

    def add_message(self, chat: Chat, sender: User | None, kind: str, **fields: Any) -> StoredMessage:
        """Store a new message with the chat's next id (users and the bot share the counter)."""
        message_id = self._next_message_id.get(chat.id, 1)
        self._next_message_id[chat.id] = message_id + 1
        message = StoredMessage(chat=chat, message_id=message_id, sender=sender, kind=kind, **fields)
        self.messages.setdefault(chat.id, {})[message_id] = message
        return message

    def resolve_reply(self, chat: Chat, params: dict[str, Any]) -> StoredMessage | None:
        """The message a send replies to; 400 when missing unless sending without reply is allowed."""
        reply = params.get("reply_parameters")
        allow_missing = bool(params.get("allow_sending_without_reply"))
        if isinstance(reply, dict):
            target_id = reply.get("message_id")
            allow_missing = allow_missing or bool(reply.get("allow_sending_without_reply"))
            if reply.get("chat_id") not in (None, chat.id):
                raise bad_request("replies to other chats are not supported by the fake")
        elif reply is not None:
            raise bad_request("can't parse reply parameters JSON object")
        else:
            target_id = params.get("reply_to_message_id")
        if target_id is None:
            return None
        target = self.message(chat.id, target_id)
        if target is None and not allow_missing:
            raise bad_request("message to be replied not found")
        return target

    def next_media_group_id(self) -> str:
        """A fresh media_group_id, digits as Telegram uses."""
        return str(next(self._media_group_ids))

    # --- files --------------------------------------------------------------------------------

    def add_file(self, data: bytes, kind: str) -> StoredFile:
        """Store bytes under a new file_id of the given kind ("photo" or "document")."""
        prefix = {"photo": "AgACAgIAAxkBAA", "video": "BAACAgIAAxkBAA"}.get(kind, "BQACAgIAAxkBAA")
        number = next(self._file_numbers)
        stored = StoredFile(
            file_id=f"{prefix}{number:05d}{secrets.token_urlsafe(24)}",
            file_unique_id=f"AQAD{number:05d}{secrets.token_hex(4)}",
            data=data,
            kind=kind,
        )
        self.files[stored.file_id] = stored
        return stored

    def store_photo(self, data: bytes) -> list[dict[str, Any]]:
        """PhotoSize list for new photo bytes: smaller sizes first, the original last; all hold the bytes."""
        info = inspect_photo(data)
        dims = []
        for box in _PHOTO_BOXES:
            scale = box / max(info.width, info.height)
            if scale < 1:
                dims.append((max(1, round(info.width * scale)), max(1, round(info.height * scale))))
        if not dims:
            dims.append((max(1, info.width // 2), max(1, info.height // 2)))
        dims.append((info.width, info.height))
        sizes = []
        for width, height in dims:
            stored = self.add_file(data, "photo")
            sizes.append({"file_id": stored.file_id, "file_unique_id": stored.file_unique_id,
                          "width": width, "height": height, "file_size": stored.size})
        for size in sizes:
            self.photo_sets[size["file_id"]] = sizes
        return sizes

    def store_document(self, data: bytes, file_name: str, mime_type: str | None) -> dict[str, Any]:
        """Document object for new bytes."""
        if not mime_type or mime_type == "application/octet-stream":
            mime_type = mimetypes.guess_type(file_name)[0] or "application/octet-stream"
        stored = self.add_file(data, "document")
        document = {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id,
                    "file_name": file_name, "mime_type": mime_type, "file_size": stored.size}
        self.documents[stored.file_id] = document
        return document

    def file_path_of(self, stored: StoredFile) -> str:
        """The download path getFile hands out (assigned on first request, stable afterwards)."""
        if stored.file_path is None:
            number = next(self._file_numbers)
            if stored.kind == "photo":
                stored.file_path = f"photos/file_{number}.jpg"
            else:
                name = self.documents.get(stored.file_id, {}).get("file_name", "")
                suffix = name[name.rfind("."):] if "." in name else ""
                stored.file_path = f"documents/file_{number}{suffix}"
            self.files_by_path[stored.file_path] = stored
        return stored.file_path

    # --- updates and long polling ---------------------------------------------------------------

    def push_update(self, kind: str, payload: dict[str, Any]) -> None:
        """Queue an update unless the bot's allowed_updates excludes its kind (then Telegram drops it)."""
        if self.allowed_updates and kind not in self.allowed_updates:
            return
        update = {"update_id": next(self._update_ids), kind: payload}
        self.updates.append(update)
        self.queued.append(update)
        self.wake_pollers()

    def redeliver(self, payload: dict[str, Any]) -> None:
        """Queue again, under its own update_id, the update that carried `payload`: what Telegram does
        with an update a bot that crashed never confirmed (it never makes a new update of an old message)."""
        update = next(u for u in reversed(self.queued) if any(v is payload for v in u.values()))
        self.updates = sorted([*self.updates, update], key=lambda queued: queued["update_id"])
        self.wake_pollers()

    def wake_pollers(self) -> None:
        """Wake every waiting getUpdates so it re-checks the queue, its rival, or shutdown."""
        self._update_signal.set()
        self._update_signal = asyncio.Event()

    async def next_update(self, timeout: float) -> None:
        """Wait until an update is queued (or the pollers are woken for another reason), at most `timeout`."""
        try:
            await asyncio.wait_for(self._update_signal.wait(), timeout)
        except TimeoutError:
            pass

    async def poll(self, offset: int | None, limit: int, timeout: float) -> list[dict[str, Any]]:
        """getUpdates: confirm below offset, then answer at once or when updates arrive or time runs out."""
        self._poll_generation += 1
        generation = self._poll_generation
        self.wake_pollers()  # the older request, if any, is terminated by this one
        if offset is not None and offset < 0:
            self.updates = self.updates[offset:]
        elif offset:
            self.updates = [u for u in self.updates if u["update_id"] >= offset]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            signal = self._update_signal
            if generation != self._poll_generation:
                raise ApiError(409, _CONFLICT)
            remaining = deadline - loop.time()
            if self.updates or remaining <= 0 or self.stopping:
                return self.updates[:limit]
            try:
                await asyncio.wait_for(signal.wait(), remaining)
            except TimeoutError:
                pass

    # --- users acting ---------------------------------------------------------------------------

    def user_message(
        self, chat: Chat, user: User | None, *, text: str | None, caption: str | None,
        photo: bytes | None, document: tuple[bytes, str, str] | None, reply_to: int | None,
        media_group_id: str | None, entities_for_commands: bool,
    ) -> StoredMessage:
        """Store a message a user (or a channel, with user None) wrote."""
        if photo is not None and document is not None:
            raise ValueError("a message carries a photo or a document, not both")
        has_media = photo is not None or document is not None
        if has_media and text is not None:
            raise ValueError("media messages carry a caption, not text")
        if not has_media and (caption is not None or media_group_id is not None):
            raise ValueError("caption and media_group_id need a photo or a document")
        if not has_media and not text:
            raise ValueError("a text message needs text")
        self.remember(chat, user)
        target = None
        if reply_to is not None:
            target = self.message(chat.id, reply_to)
            if target is None:
                raise ValueError(f"no message {reply_to} in chat {chat.id} to reply to")
        fields: dict[str, Any] = {"reply_to": target, "media_group_id": media_group_id}
        if photo is not None:
            if not is_photo(photo):
                raise ValueError("user photo bytes must be an image Telegram accepts")
            kind = "photo"
            fields.update(photo=self.store_photo(photo), media=photo)
        elif document is not None:
            kind = "document"
            data, file_name, mime_type = document
            fields.update(document=self.store_document(data, file_name, mime_type), media=data,
                          file_name=file_name, mime_type=mime_type)
        else:
            kind = "text"
        if text is not None:
            fields.update(text=text, entities=command_entities(text) if entities_for_commands else None)
        if caption is not None:
            fields.update(caption=caption,
                          caption_entities=command_entities(caption) if entities_for_commands else None)
        return self.add_message(chat, user, kind, **fields)

    def user_edit(self, chat: Chat, user: User | None, message_id: int, *, text: str | None,
                  caption: str | None) -> StoredMessage:
        """Change a user's (or channel's) own message and stamp the edit date."""
        message = self.message(chat.id, message_id)
        if message is None or message.from_bot or message.sender != user:
            raise ValueError(f"message {message_id} in chat {chat.id} is not this user's message")
        if text is not None:
            if message.kind != "text":
                raise ValueError("only text messages have text to edit")
            message.text, message.entities = text, command_entities(text) or None
        if caption is not None:
            if message.kind == "text":
                raise ValueError("text messages have no caption to edit")
            message.caption, message.caption_entities = caption, command_entities(caption) or None
        message.edit_date = max(message.date, int(time.time()))
        return message

    def user_press(self, chat: Chat, user: User, message_id: int, data: str, *, crafted: bool = False) -> str:
        """Create a callback query for a button the bot attached to one of its messages (`crafted`: any data, as a
        modified client can send: Telegram passes the data on without checking it against the keyboard)."""
        message = self.message(chat.id, message_id)
        if message is None or not message.from_bot:
            raise ValueError(f"no bot message {message_id} in chat {chat.id}")
        rows = (message.reply_markup or {}).get("inline_keyboard", [])
        if not crafted and not any(button.get("callback_data") == data for row in rows for button in row):
            raise ValueError(f"message {message_id} has no button with callback_data {data!r}")
        self.remember(chat, user)
        query_id = str(secrets.randbits(63))
        self.callback_queries[query_id] = {"message_id": message_id, "chat_id": chat.id, "data": data}
        self.push_update("callback_query", {
            "id": query_id,
            "from": user.to_dict(),
            "message": message.to_dict(),
            "chat_instance": str(abs(hash((chat.id, self.bot.id))) % 10**18),
            "data": data,
        })
        return query_id
