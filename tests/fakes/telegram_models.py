"""Data types of the fake Telegram Bot API: actors, fault settings, call records, stored messages."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

# Telegram limits the fake enforces, named once so checks and tests agree.
MAX_TEXT_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
MAX_CALLBACK_DATA_BYTES = 64
MAX_PHOTO_UPLOAD_BYTES = 10 * 1024 * 1024
MAX_DOCUMENT_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_BOT_DOWNLOAD_BYTES = 20 * 1024 * 1024
MAX_PHOTO_SIDES_SUM = 10000
MAX_PHOTO_ASPECT = 20
MIN_ALBUM_ITEMS = 2
MAX_ALBUM_ITEMS = 10


class ApiError(Exception):
    """A Telegram-shaped failure: becomes {"ok": false, "error_code": ..., "description": ...}."""

    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None) -> None:
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters

    def payload(self) -> dict[str, Any]:
        """The JSON body Telegram answers with."""
        body: dict[str, Any] = {"ok": False, "error_code": self.code, "description": self.description}
        if self.parameters:
            body["parameters"] = self.parameters
        return body


def bad_request(reason: str) -> ApiError:
    """A 400 with Telegram's "Bad Request: " prefix."""
    return ApiError(400, f"Bad Request: {reason}")


def too_many_requests(retry_after: int) -> ApiError:
    """A 429 carrying retry_after in seconds, as Telegram sends it."""
    return ApiError(
        429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after}
    )


@dataclass(frozen=True)
class User:
    """A Telegram user the tests act as."""

    id: int
    first_name: str = "Test"
    username: str | None = None
    is_bot: bool = False
    #: the IETF language tag of the user's Telegram app (Telegram sends it in updates; None: not sent)
    language_code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The User object as Telegram serialises it."""
        data: dict[str, Any] = {"id": self.id, "is_bot": self.is_bot, "first_name": self.first_name}
        if self.username:
            data["username"] = self.username
        if self.language_code:
            data["language_code"] = self.language_code
        return data


@dataclass(frozen=True)
class Chat:
    """A chat the tests write in: private, group, supergroup or channel."""

    id: int
    type: str = "private"
    title: str | None = None
    first_name: str | None = None
    username: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The Chat object as Telegram serialises it inside a Message."""
        data: dict[str, Any] = {"id": self.id, "type": self.type}
        if self.type == "private":
            data["first_name"] = self.first_name or "Test"
        elif self.title is not None:
            data["title"] = self.title
        if self.username:
            data["username"] = self.username
        return data

    @property
    def is_group(self) -> bool:
        """Whether Telegram applies the per-group flood limit to this chat."""
        return self.type in ("group", "supergroup", "channel")


def private_chat(user: User) -> Chat:
    """The private chat between `user` and the bot (its id is the user's id, as in Telegram)."""
    return Chat(id=user.id, type="private", first_name=user.first_name, username=user.username)


def group(id: int, title: str = "Test group", *, supergroup: bool = True) -> Chat:
    """A group chat; supergroups have ids below -100_0000000000 in Telegram, tests pick any negative."""
    return Chat(id=id, type="supergroup" if supergroup else "group", title=title)


def channel(id: int, title: str = "Test channel") -> Chat:
    """A channel chat for channel_posts."""
    return Chat(id=id, type="channel", title=title)


FAULT_KINDS = ("500", "429", "timeout", "drop")


@dataclass
class TgFaults:
    """Random fault injection: `rate` of eligible requests get one of `kinds`."""

    rate: float = 0.0
    kinds: tuple[str, ...] = FAULT_KINDS
    retry_after: int = 1
    timeout_seconds: float = 15.0
    seed: int | None = None
    # None = every method except getUpdates; the pseudo-method "download" covers file downloads.
    methods: frozenset[str] | None = None

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds {sorted(unknown)}; known: {FAULT_KINDS}")
        if not 0.0 <= self.rate <= 1.0:
            raise ValueError("fault rate must be within [0, 1]")


@dataclass
class ApiCall:
    """One request the bot made: decoded parameters, uploaded files and what it got back."""

    method: str
    params: dict[str, Any]
    files: dict[str, tuple[str, bytes, str]]
    time: float
    result: Any = None
    error: dict[str, Any] | None = None
    status: int | None = None
    fault: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the bot got a successful answer."""
        return self.status == 200

    def summary(self) -> str:
        """A one-line description for failure dumps (bytes and long strings shortened)."""
        params = ", ".join(f"{k}={_short(v)}" for k, v in self.params.items())
        files = ", ".join(f"{k}=<{len(v[1])} bytes {v[0]!r}>" for k, v in self.files.items())
        outcome = "pending" if self.status is None else str(self.status)
        if self.error:
            outcome += f" {self.error.get('description')}"
        if self.fault:
            outcome += f" [fault {self.fault}]"
        extra = f" files: {files}" if files else ""
        return f"{self.time:.3f} {self.method}({params}){extra} -> {outcome}"


def _short(value: Any, limit: int = 80) -> Any:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass
class StoredFile:
    """Bytes the fake knows under a file_id: user uploads and bot uploads alike."""

    file_id: str
    file_unique_id: str
    data: bytes
    kind: str  # "photo" or "document": Telegram refuses to reuse one as the other
    file_path: str | None = None

    @property
    def size(self) -> int:
        """Size in bytes as Telegram reports it in file_size."""
        return len(self.data)


@dataclass(frozen=True)
class FileDownload:
    """One download of a file through the file endpoint."""

    file_id: str
    file_path: str
    size: int
    time: float


@dataclass
class StoredMessage:
    """A message in a chat, by a user or the bot, with its current (edited) content."""

    chat: Chat
    message_id: int
    sender: User | None  # None for channel posts
    kind: str  # "text", "photo", "document"
    date: int = field(default_factory=lambda: int(time.time()))
    text: str | None = None
    entities: list[dict[str, Any]] | None = None
    caption: str | None = None
    caption_entities: list[dict[str, Any]] | None = None
    reply_markup: dict[str, Any] | None = None
    reply_to: StoredMessage | None = None
    photo: list[dict[str, Any]] | None = None
    document: dict[str, Any] | None = None
    media: bytes | None = None
    file_name: str | None = None
    mime_type: str | None = None
    media_group_id: str | None = None
    edit_date: int | None = None
    deleted: bool = False
    from_bot: bool = False
    reactions: list[dict[str, Any]] = field(default_factory=list)
    #: the chat a message was sent on behalf of (anonymous group admins, users posting as a channel)
    sender_chat: Chat | None = None
    #: fields of other kinds of message, as Telegram serialises them ("invoice", "successful_payment")
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self, *, nested: bool = False) -> dict[str, Any]:
        """The Message object Telegram would return; `nested` drops the reply chain (shallow)."""
        data: dict[str, Any] = {
            "message_id": self.message_id,
            "date": self.date,
            "chat": self.chat.to_dict(),
        }
        if self.sender is not None:
            data["from"] = self.sender.to_dict()
        else:
            data["sender_chat"] = self.chat.to_dict()
        if self.sender_chat is not None:
            data["sender_chat"] = self.sender_chat.to_dict()
        for key in ("text", "entities", "caption", "caption_entities", "photo", "document",
                    "media_group_id", "edit_date"):
            value = getattr(self, key)
            if value:
                data[key] = value
        # Telegram echoes only inline keyboards; reply keyboards live on the client side.
        if self.reply_markup and "inline_keyboard" in self.reply_markup:
            data["reply_markup"] = self.reply_markup
        data.update(self.extra)
        if self.reply_to is not None and not nested:
            data["reply_to_message"] = self.reply_to.to_dict(nested=True)
        return data


@dataclass(frozen=True)
class SentMessage:
    """A snapshot of a message the bot sent, with edits applied."""

    chat_id: int
    message_id: int
    kind: str  # "text", "photo", "document", or "media_group_item" for album members
    media_kind: str | None  # "photo" / "document" for media, album members included
    text: str | None
    caption: str | None
    entities: list[dict[str, Any]] | None
    reply_to_message_id: int | None
    reply_markup: dict[str, Any] | None
    media: bytes | None
    file_name: str | None
    mime_type: str | None
    media_group_id: str | None
    edited: bool
    deleted: bool
    reactions: tuple[str, ...]

    @classmethod
    def of(cls, message: StoredMessage) -> SentMessage:
        """Snapshot a stored bot message."""
        kind = "media_group_item" if message.media_group_id else message.kind
        return cls(
            chat_id=message.chat.id,
            message_id=message.message_id,
            kind=kind,
            media_kind=None if message.kind == "text" else message.kind,
            text=message.text,
            caption=message.caption,
            entities=message.entities or message.caption_entities,
            reply_to_message_id=message.reply_to.message_id if message.reply_to else None,
            reply_markup=message.reply_markup,
            media=message.media,
            file_name=message.file_name,
            mime_type=message.mime_type,
            media_group_id=message.media_group_id,
            edited=message.edit_date is not None,
            deleted=message.deleted,
            reactions=tuple(r.get("emoji", "") for r in message.reactions),
        )
