"""savePreparedInlineMessage: a message a Mini App's user may send to a chat they pick (WebApp.shareMessage).

Parsed as the Bot API server parses it (tdlib/telegram-bot-api, error texts with the first letter lowered):
user_id a positive id; `result` one InlineQueryResult object with a type the API knows and an id; an
article needs title and input_message_content (or the legacy message_text); a photo needs photo_url or,
cached, photo_file_id; reply_markup is an inline keyboard, and a web_app button is refused as in inline
results (BUTTON_TYPE_INVALID: the message may land in any chat). Telegram also limits the id to 64 bytes
(RESULT_ID_INVALID). Answers a PreparedInlineMessage; every one is kept in `saved` for tests to read.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_checks import check_reply_markup
from tests.fakes.telegram_models import bad_request

#: how long a prepared message stays usable in the fake (Telegram's lifetime is not documented)
LIFETIME_SECONDS = 24 * 60 * 60
_MAX_ID_BYTES = 64
_RESULT_TYPES = frozenset({
    "article", "audio", "contact", "document", "game", "gif", "location", "mpeg4_gif", "photo", "sticker",
    "venue", "video", "voice",
})
_ALLOW = ("allow_user_chats", "allow_bot_chats", "allow_group_chats", "allow_channel_chats")


@dataclass(frozen=True)
class PreparedMessage:
    """A saved prepared message: who may send it, what it is, and to which kinds of chats."""

    id: str
    user_id: int
    result: dict[str, Any]
    allow: frozenset[str]
    expiration_date: int


class PreparedMessages:
    """The messages the bot prepared, in order."""

    def __init__(self) -> None:
        self.saved: list[PreparedMessage] = []

    def for_user(self, user_id: int) -> list[PreparedMessage]:
        """What the bot prepared for one user."""
        return [message for message in self.saved if message.user_id == user_id]

    async def save_prepared_inline_message(self, params: dict[str, Any], files: Any) -> dict[str, Any]:
        """savePreparedInlineMessage."""
        user_id = params.get("user_id")
        if isinstance(user_id, bool) or not isinstance(user_id, int) or user_id <= 0:
            raise bad_request("invalid user_id specified")
        result = _inline_query_result(params.get("result"))
        allow = frozenset(name for name in _ALLOW if params.get(name) is True)
        message = PreparedMessage(secrets.token_urlsafe(12), user_id, result, allow,
                                  int(time.time()) + LIFETIME_SECONDS)
        self.saved.append(message)
        return {"id": message.id, "expiration_date": message.expiration_date}


def _inline_query_result(value: Any) -> dict[str, Any]:
    if value is None or value == "":
        raise bad_request("result isn't specified")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError as error:
            raise bad_request(f"can't parse JSON encoded web view query results {error}") from None
    if not isinstance(value, dict):
        raise bad_request("inline query result must be an object")
    kind, result_id = value.get("type"), value.get("id")
    if not isinstance(kind, str):
        raise bad_request('can\'t find field "type"')
    if not isinstance(result_id, str):
        raise bad_request('can\'t find field "id"')
    if not 1 <= len(result_id.encode()) <= _MAX_ID_BYTES:
        raise bad_request("RESULT_ID_INVALID")
    kind = kind.lower()
    if kind not in _RESULT_TYPES:
        raise bad_request(f'type "{kind}" is unsupported for the inline query result')
    content = value.get("input_message_content")
    if content is not None and not isinstance(content, dict):
        raise bad_request('field "input_message_content" must be of type Object')
    if kind == "article":
        if content is None and not isinstance(value.get("message_text"), str):
            raise bad_request('can\'t find field "message_text"')
        _required(value, "title")
    if kind == "photo" and not (isinstance(value.get("photo_url"), str) and value["photo_url"]):
        _required(value, "photo_file_id")
    check_reply_markup(value.get("reply_markup"), None)
    return {**value, "type": kind}


def _required(value: dict[str, Any], field: str) -> None:
    if not isinstance(value.get(field), str) or not value[field]:
        raise bad_request(f'can\'t find field "{field}"')
