"""What Telegram hands a Mini App: `initData` signed with a (test) bot token, as a Telegram client builds it.

The signing is written out here on its own, not borrowed from bot/http/initdata.py, so a mistake in the
bot's check cannot be mirrored by the tests' signer and pass unseen.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from typing import Any
from urllib.parse import quote, urlencode

from tests.fakes.telegram_models import User


def web_app_user(user: User | dict[str, Any]) -> dict[str, Any]:
    """The WebAppUser object Telegram puts in initData for a user (no is_bot for people, allows_write_to_pm)."""
    if isinstance(user, dict):
        return user
    data: dict[str, Any] = {"id": user.id, "first_name": user.first_name}
    if user.username:
        data["username"] = user.username
    if user.language_code:
        data["language_code"] = user.language_code
    data["allows_write_to_pm"] = True
    return data


def signed_init_data(token: str, user: User | dict[str, Any] | str | None, *, auth_date: int | None = None,
                     **extra: str) -> str:
    """initData for `user` signed with `token`; extra fields (start_param, ...) are signed too.

    `user` None leaves the user field out; a str is put in as it is (for malformed users).
    """
    fields: dict[str, str] = {"auth_date": str(int(time.time()) if auth_date is None else auth_date), **extra}
    if isinstance(user, str):
        fields["user"] = user
    elif user is not None:
        fields["user"] = json.dumps(web_app_user(user), ensure_ascii=False, separators=(",", ":"))
    check = "\n".join(f"{key}={value}" for key, value in sorted(fields.items()))
    key = hmac.new(b"WebAppData", token.encode(), hashlib.sha256).digest()
    fields["hash"] = hmac.new(key, check.encode(), hashlib.sha256).hexdigest()
    return urlencode(fields, quote_via=quote)
