"""savePreparedInlineMessage: a message a Mini App's user may send to a chat they pick (WebApp.shareMessage).

Parsed as the Bot API server parses it (tdlib/telegram-bot-api, error texts with the first letter lowered):
user_id a positive id; `result` one InlineQueryResult (checked as answerInlineQuery checks its results:
telegram_inline.check_inline_result). Answers a PreparedInlineMessage; every one is kept in `saved` for
tests to read.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_inline import check_inline_result
from tests.fakes.telegram_models import bad_request

#: how long a prepared message stays usable in the fake (Telegram's lifetime is not documented)
LIFETIME_SECONDS = 24 * 60 * 60
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
    return check_inline_result(value)
