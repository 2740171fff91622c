"""Telegram Mini App `initData`: checked as Telegram documents, turned into the person it vouches for.

Telegram's "Validating data received via the Mini App": secret_key = HMAC-SHA256(key="WebAppData",
msg=bot_token); the data-check-string is every received field but `hash`, sorted by key, as "key=value"
joined by line feeds; `hash` must be the hex HMAC-SHA256 of that string keyed with secret_key. The
`signature` field (Ed25519, for third parties who lack the token) is one of the received fields, so it
is part of the string here; only the third-party check leaves it out.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from dataclasses import dataclass
from urllib.parse import parse_qsl

MAX_AGE_SECONDS = 24 * 60 * 60
#: how far in the future auth_date may lie (clocks differ a little between Telegram and this host)
_CLOCK_SKEW_SECONDS = 60
_SCHEME = "tma"


class InitDataError(ValueError):
    """The initData is missing, malformed, forged, expired or names no user: the request is not authenticated."""


@dataclass(frozen=True)
class WebAppUser:
    """Who opened the Mini App, as Telegram vouched for them."""

    user_id: int
    first_name: str
    language_code: str | None
    start_param: str | None
    auth_date: int


def secret_key(bot_token: str) -> bytes:
    """The key Telegram signs a bot's initData with."""
    return hmac.new(b"WebAppData", bot_token.encode(), hashlib.sha256).digest()


def data_check_string(fields: dict[str, str]) -> str:
    """The fields but `hash`, sorted by key, one "key=value" a line."""
    return "\n".join(f"{key}={fields[key]}" for key in sorted(fields) if key != "hash")


def expected_hash(fields: dict[str, str], bot_token: str) -> str:
    """The hex hash Telegram puts in initData carrying these fields."""
    return hmac.new(secret_key(bot_token), data_check_string(fields).encode(), hashlib.sha256).hexdigest()


def validate(init_data: str, bot_token: str, *, max_age: float = MAX_AGE_SECONDS,
             now: float | None = None) -> WebAppUser:
    """The user a Telegram-signed initData names; InitDataError for anything else."""
    fields = _fields(init_data)
    received = fields.get("hash")
    if not received:
        raise InitDataError("no hash")
    if not hmac.compare_digest(received.encode(), expected_hash(fields, bot_token).encode()):
        raise InitDataError("hash does not match")
    auth_date = _auth_date(fields.get("auth_date"))
    current = time.time() if now is None else now
    if current - auth_date > max_age:
        raise InitDataError("expired")
    if auth_date - current > _CLOCK_SKEW_SECONDS:
        raise InitDataError("auth_date in the future")
    return _user(fields.get("user"), auth_date, fields.get("start_param") or None)


def from_authorization(header: str | None, bot_token: str, *, max_age: float = MAX_AGE_SECONDS,
                       now: float | None = None) -> WebAppUser:
    """The user of an `Authorization: tma <initData>` header; InitDataError when absent or invalid."""
    scheme, _, init_data = (header or "").strip().partition(" ")
    if scheme.lower() != _SCHEME or not init_data.strip():
        raise InitDataError("no tma authorization")
    return validate(init_data.strip(), bot_token, max_age=max_age, now=now)


def _fields(init_data: str) -> dict[str, str]:
    try:
        pairs = parse_qsl(init_data, keep_blank_values=True, strict_parsing=True)
    except ValueError:
        raise InitDataError("not a query string") from None
    fields = dict(pairs)
    if len(fields) != len(pairs):  # a repeated key could sign one value and let the reader see another
        raise InitDataError("a field is repeated")
    return fields


def _auth_date(value: str | None) -> int:
    if value is None or not value.isdecimal():
        raise InitDataError("no auth_date")
    return int(value)


def _user(value: str | None, auth_date: int, start_param: str | None) -> WebAppUser:
    if value is None:
        raise InitDataError("no user")
    try:
        user = json.loads(value)
    except ValueError:
        raise InitDataError("user is not JSON") from None
    if not isinstance(user, dict):
        raise InitDataError("user is not an object")
    user_id, first_name, language = user.get("id"), user.get("first_name"), user.get("language_code")
    if not isinstance(user_id, int) or isinstance(user_id, bool) or user_id <= 0:
        raise InitDataError("user has no id")
    if not isinstance(first_name, str) or (language is not None and not isinstance(language, str)):
        raise InitDataError("user is malformed")
    return WebAppUser(user_id=user_id, first_name=first_name, language_code=language or None,
                      start_param=start_param, auth_date=auth_date)
