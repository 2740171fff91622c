"""Decoding Bot API requests (query, JSON, urlencoded, multipart) into typed parameters."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes.telegram_models import ApiError, bad_request

_INT_PARAMS = frozenset({
    "chat_id", "message_id", "reply_to_message_id", "offset", "limit", "timeout", "user_id",
    "cache_time", "message_thread_id", "from_chat_id", "subscription_period",
})
_BOOL_PARAMS_PAYMENTS = frozenset({"ok", "is_canceled"})
_BOOL_PARAMS = frozenset({
    "disable_notification", "protect_content", "allow_sending_without_reply", "show_alert",
    "drop_pending_updates", "disable_web_page_preview", "has_spoiler", "is_big",
    "disable_content_type_detection", "show_caption_above_media", "is_personal",
    "allow_user_chats", "allow_bot_chats", "allow_group_chats", "allow_channel_chats",
}) | _BOOL_PARAMS_PAYMENTS
_JSON_PARAMS = frozenset({
    "reply_markup", "media", "entities", "caption_entities", "reply_parameters", "commands",
    "scope", "reaction", "allowed_updates", "link_preview_options", "prices", "results", "button",
})
_FLOAT_PARAMS = frozenset({"timeout"})  # fractions of a second keep long-poll tests fast
_INTEGER = re.compile(r"-?\d+")
_FLOAT = re.compile(r"-?\d+(\.\d+)?")


@dataclass
class DecodedRequest:
    """Parameters with Telegram's types, and uploaded files as (filename, bytes, content_type)."""

    params: dict[str, Any] = field(default_factory=dict)
    files: dict[str, tuple[str, bytes, str]] = field(default_factory=dict)


def coerce(name: str, value: Any) -> Any:
    """Give a form/JSON value the type Telegram reads the parameter as; leave the rest alone."""
    if not isinstance(value, str):
        return value
    if name in _JSON_PARAMS:
        try:
            return json.loads(value)
        except ValueError:
            raise bad_request(f"can't parse {name} JSON object") from None
    if name in _INT_PARAMS and _INTEGER.fullmatch(value.strip()):
        return int(value)
    if name in _FLOAT_PARAMS and _FLOAT.fullmatch(value.strip()):
        return float(value)
    if name in _BOOL_PARAMS and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    return value


async def decode_request(request: web.Request) -> DecodedRequest:
    """Read a Bot API request in any of the encodings Telegram accepts."""
    decoded = DecodedRequest()
    for name, value in request.query.items():
        decoded.params[name] = coerce(name, value)
    if request.method != "POST" or not request.body_exists:
        return decoded
    if request.content_type == "application/json":
        try:
            body = json.loads(await request.read() or b"{}")
        except ValueError:
            raise bad_request("can't parse JSON encoded request body") from None
        if not isinstance(body, dict):
            raise bad_request("JSON object expected as request body")
        for name, value in body.items():
            decoded.params[name] = coerce(name, value)
        return decoded
    if request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        form = await request.post()
        for name, value in form.items():
            if isinstance(value, web.FileField):
                decoded.files[name] = (value.filename, value.file.read(), value.content_type)
            else:
                decoded.params[name] = coerce(name, value)
    return decoded


def int_param(params: dict[str, Any], name: str, missing: str) -> int:
    """An integer parameter, or a 400 with `missing` when absent or not a number."""
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise bad_request(missing)
    return value


def str_param(params: dict[str, Any], name: str) -> str | None:
    """A text parameter as Telegram reads it (numbers sent in JSON become their digits)."""
    value = params.get(name)
    if value is None:
        return None
    if isinstance(value, (dict, list)):
        raise ApiError(400, f"Bad Request: parameter {name!r} must be a string")
    return str(value)
