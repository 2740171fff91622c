"""Guest mode in the fake Bot API (Bot API 10.0): `@bot …` in a chat the bot is not a member of.

As Telegram behaves: with guest mode on (BotFather's Mini App, "Guest Mode"; getMe's
`supports_guest_queries`), a person mentions the bot in a private chat, group or supergroup, usually as
a reply to someone's photo; the bot gets a `guest_message` update, a Message with `guest_query_id`,
`from` the caller, `chat` where it was summoned and the replied-to message in `reply_to_message`. The
bot never saw that photo as an update (it is not in the chat). It answers once, within the deadline,
with `answerGuestQuery(guest_query_id, result)`, an InlineQueryResult checked as answerInlineQuery
checks one; the answer is a SentGuestMessage `{inline_message_id}`, an inline message the bot edits like
any other (no uploads). `send*` into a group the bot is not a member of is refused (403). Where the bot
is a member too, the mention also arrives as an ordinary `message` (the double delivery). In a private
chat between two people the chat's id is the other person's, the id of that person's own chat with the
bot: a send there would land in the wrong chat, so the posts of such chats are kept apart here.
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_checks import is_photo
from tests.fakes.telegram_inline import InlineMessage, InlineMode, check_inline_result
from tests.fakes.telegram_models import Chat, StoredMessage, User, bad_request
from tests.fakes.telegram_privacy import seen_by_bot
from tests.fakes.telegram_state import TelegramState

#: not documented; Telegram's inline answers are dropped after about 10 s, and guest queries are held alike
GUEST_ANSWER_TIMEOUT_S = 10.0
QUERY_INVALID = "query is too old and response timeout expired or query ID is invalid"


@dataclass
class GuestQuery:
    """A mention of the bot, and the answer it got."""

    query_id: str
    user: User
    chat: Chat
    message: dict[str, Any]
    at: float
    answer: dict[str, Any] | None = None
    answered_at: float | None = None
    inline_message_id: str | None = None


class GuestMode:
    """The guest side of the fake: people post and mention the bot; the bot answers once and edits."""

    def __init__(self, state: TelegramState, inline: InlineMode, *, privacy_mode: Callable[[], bool],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._state = state
        self._inline = inline
        self._privacy_mode = privacy_mode
        self._clock = clock
        #: BotFather's Guest Mode switch: off (a new bot's default), nobody can summon the bot
        self.enabled = False
        self.queries: dict[str, GuestQuery] = {}
        #: posts in private chats between two people: (caller, other) -> message id -> message
        self._private: dict[tuple[int, int], dict[int, StoredMessage]] = {}
        self._private_ids = itertools.count(1)

    # --- people acting ----------------------------------------------------------------------------

    def outside(self, chat: Chat) -> None:
        """The bot is not a member of this group: Telegram refuses sends there (403)."""
        if chat.type not in ("group", "supergroup"):
            raise ValueError("only groups have members; a private chat between two people is `between`")
        self._state.remember(chat, None)
        self._state.outside.add(chat.id)

    @staticmethod
    def between(caller: User, other: User) -> Chat:
        """The private chat of two people as the caller's app names it: by the other person's id."""
        return Chat(other.id, "private", first_name=other.first_name, username=other.username)

    def post(self, chat: Chat, user: User, *, text: str | None = None, photo: bytes | None = None,
             document: tuple[bytes, str, str] | None = None, sticker: bytes | None = None,
             reply_to: int | None = None, caller: User | None = None) -> int:
        """Someone writes in a chat without the bot hearing of it (it is not a member); the message id.

        In a private chat between two people (`between(caller, other)`), pass the caller of that chat."""
        if sticker is not None:
            return self._store(chat, user, caller, kind="sticker", extra={"sticker": self._sticker(sticker)},
                               reply_to=reply_to).message_id
        if chat.type == "private":
            fields: dict[str, Any] = {"text": text}
            kind = "text"
            if photo is not None:
                kind, fields = "photo", {"photo": self._state.store_photo(photo), "media": photo}
            elif document is not None:
                data, name, mime = document
                kind, fields = "document", {"document": self._state.store_document(data, name, mime), "media": data,
                                            "file_name": name, "mime_type": mime}
            return self._store(chat, user, caller, kind=kind, reply_to=reply_to, **fields).message_id
        message = self._state.user_message(chat, user, text=text, caption=None, photo=photo, document=document,
                                           reply_to=reply_to, media_group_id=None, entities_for_commands=True)
        return message.message_id

    def summon(self, chat: Chat, user: User, text: str, *, reply_to: int | None = None,
               caller_of: User | None = None) -> str:
        """`user` writes `text` (mentioning the bot) in `chat`, replying to `reply_to`: a guest_message update, and
        an ordinary message update too where the bot is a member and would see it; the guest query id."""
        if not self.enabled:
            raise ValueError("guest mode is off for this bot (BotFather's Mini App, Guest Mode): nobody can summon it")
        if f"@{self._state.bot.username}".lower() not in text.lower():
            raise ValueError("a guest query is a message that mentions the bot")
        self._state.users[user.id] = user
        if chat.type == "private":
            message = self._store(chat, user, user, kind="text", text=text, reply_to=reply_to)
        else:
            message = self._state.user_message(chat, user, text=text, caption=None, photo=None, document=None,
                                               reply_to=reply_to, media_group_id=None, entities_for_commands=True)
            message.entities = [*(message.entities or []), *_mentions(text, self._state.bot.username or "")]
        query_id = str(secrets.randbits(63))
        payload = {**message.to_dict(), "guest_query_id": query_id}
        self.queries[query_id] = GuestQuery(query_id, user, chat, payload, self._clock())
        self._state.push_update("guest_message", payload)
        member = chat.type != "private" and chat.id not in self._state.outside
        admins = self._state.chat_admins.get(chat.id, set())
        if member and seen_by_bot(message, self._state.bot, privacy_mode=self._privacy_mode(), admins=admins):
            self._state.push_update("message", message.to_dict())
        return query_id

    def user_presses(self, user: User, inline_message_id: str, data: str) -> str:
        """Someone presses a callback button of an inline message the bot answered with: a callback query."""
        message = self._inline.messages[inline_message_id]
        rows = (message.reply_markup or {}).get("inline_keyboard", [])
        if not any(button.get("callback_data") == data for row in rows for button in row):
            raise ValueError(f"inline message {inline_message_id} has no button with callback_data {data!r}")
        self._state.users[user.id] = user
        query_id = str(secrets.randbits(63))
        self._state.callback_queries[query_id] = {"inline_message_id": inline_message_id, "data": data}
        self._state.push_update("callback_query", {
            "id": query_id, "from": user.to_dict(), "inline_message_id": inline_message_id,
            "chat_instance": str(abs(hash(inline_message_id)) % 10**18), "data": data})
        return query_id

    def message_of(self, query_id: str) -> InlineMessage | None:
        """The inline message the bot's answer to a guest query became (None before the answer)."""
        query = self.queries[query_id]
        return None if query.inline_message_id is None else self._inline.messages[query.inline_message_id]

    # --- methods ----------------------------------------------------------------------------------

    async def answer_guest_query(self, params: dict[str, Any], files: Any) -> dict[str, str]:
        """answerGuestQuery: once per query, in time, with one valid InlineQueryResult; a SentGuestMessage."""
        query = self.queries.get(str(params.get("guest_query_id")))
        if query is None or query.answer is not None or self._clock() - query.at > GUEST_ANSWER_TIMEOUT_S:
            raise bad_request(QUERY_INVALID)
        result = params.get("result")
        if result is None or result == "":
            raise bad_request('parameter "result" is required')
        if isinstance(result, str):
            try:
                result = json.loads(result)
            except ValueError:
                raise bad_request("can't parse inline query result JSON object") from None
        if not isinstance(result, dict):
            raise bad_request("can't parse inline query result JSON object")
        result = check_inline_result(result)
        if result["type"] == "photo" and result.get("photo_file_id") and result["photo_file_id"] not in self._state.files:
            raise bad_request("wrong file identifier/HTTP URL specified")
        inline_id = f"BgAAA{secrets.token_hex(12)}"
        message = InlineMessage(inline_id, reply_markup=result.get("reply_markup"))
        content = result.get("input_message_content")
        if content is not None:
            message.text = content.get("message_text")
        elif result.get("photo_file_id"):
            message.photo_file_id, message.caption = result["photo_file_id"], result.get("caption")
            message.photo = self._state.files[result["photo_file_id"]].data
        self._inline.messages[inline_id] = message
        query.answer, query.answered_at, query.inline_message_id = result, self._clock(), inline_id
        return {"inline_message_id": inline_id}

    # --- the posts of private chats between two people ----------------------------------------------

    def _store(self, chat: Chat, user: User, caller: User | None, *, kind: str, reply_to: int | None,
               extra: dict[str, Any] | None = None, **fields: Any) -> StoredMessage:
        if chat.type != "private":
            self._state.remember(chat, user)
            target = self._state.message(chat.id, reply_to) if reply_to is not None else None
            message = self._state.add_message(chat, user, kind, reply_to=target, extra=extra or {}, **fields)
            return message
        if caller is None:
            raise ValueError("a private chat between two people is named as one of them sees it: pass caller")
        posts = self._private.setdefault((caller.id, chat.id), {})
        target = posts.get(reply_to) if reply_to is not None else None
        if reply_to is not None and target is None:
            raise ValueError(f"no message {reply_to} in the private chat to reply to")
        message = StoredMessage(chat=chat, message_id=next(self._private_ids), sender=user, kind=kind,
                                reply_to=target, extra=extra or {}, **fields)
        posts[message.message_id] = message
        return message

    def _sticker(self, data: bytes) -> dict[str, Any]:
        if not is_photo(data):
            raise ValueError("a sticker here is a static image")
        stored = self._state.add_file(data, "document")
        return {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id, "type": "regular",
                "width": 512, "height": 512, "is_animated": False, "is_video": False, "file_size": stored.size}


def _mentions(text: str, username: str) -> list[dict[str, Any]]:
    """The mention entity of `@username` in a text (ASCII usernames: offsets in UTF-16 are those of str)."""
    at = text.lower().find(f"@{username}".lower())
    prefix = text[:at].encode("utf-16-le")
    return [] if at < 0 else [{"type": "mention", "offset": len(prefix) // 2, "length": len(username) + 1}]
