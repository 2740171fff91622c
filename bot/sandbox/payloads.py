"""Reading task-creating request bodies field by field, as the live service would check them.

Each operation's parser (`bot.sandbox.renderers.<name>`) uses these readers to turn a JSON body into a
`TaskSpec`, or raises `PayloadError` with a message naming the offending field (answered as HTTP 400).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

MAX_TEXT_CHARS = 2000
MAX_PADDING = 2048
MAX_DIMENSION = 16384
MAX_HEADSHOT_NUM = 10
MAX_HEADSHOT_TEMPLATES = 10
REMOVE_BG_ACTIONS = ("auto", "SegmentBody", "SegmentCommonImage")
_OTHER_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class PayloadError(ValueError):
    """The body is incomplete or malformed; the message names the field."""


@dataclass(frozen=True)
class TaskSpec:
    """A validated request: the operation, its input images by role, and its parameters."""

    operation: str
    images: dict[str, str]
    params: dict[str, Any] = field(default_factory=dict)
    #: the user's text, checked for the sandbox's failure triggers
    prompt: str = ""
    #: the tokens the account must hold for the task to be taken (a video costs many)
    tokens: int = 1


_MISSING = object()


def field_value(body: dict[str, Any], name: str, required: bool) -> Any:
    value = body.get(name, _MISSING)
    if value is None:
        value = _MISSING
    if value is _MISSING and required:
        raise PayloadError(f"{name} is required")
    return value


def image_field(body: dict[str, Any], name: str, *, url_only: bool = False) -> str:
    """An image field; `url_only` where the interface documents a URL and no BASE64."""
    value = field_value(body, name, required=True)
    if not isinstance(value, str) or not value.strip():
        raise PayloadError(f"{name} must be a non-empty image URL or BASE64 string")
    value = value.strip()
    is_url = value.lower().startswith(("http://", "https://"))
    if _OTHER_SCHEME.match(value) and not is_url:
        raise PayloadError(f"{name} must be an http(s) URL or BASE64 image data")
    if url_only and not is_url:
        raise PayloadError(f"{name} must be an http(s) image URL")
    return value


def text_field(body: dict[str, Any], name: str, *, required: bool = False, default: str = "") -> str:
    value = field_value(body, name, required)
    if value is _MISSING:
        return default
    if not isinstance(value, str):
        raise PayloadError(f"{name} must be a string")
    if required and not value.strip():
        raise PayloadError(f"{name} must not be empty")
    if len(value) > MAX_TEXT_CHARS:
        raise PayloadError(f"{name} must be at most {MAX_TEXT_CHARS} characters")
    return value


def number_field(body: dict[str, Any], name: str, *, required: bool, default: float | None = None,
            minimum: float | None = None, maximum: float | None = None) -> float | None:
    value = field_value(body, name, required)
    if value is _MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PayloadError(f"{name} must be a number")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise PayloadError(f"{name} must be between {minimum:g} and {maximum:g}")
    return float(value)


def integer_field(body: dict[str, Any], name: str, *, required: bool, default: int | None = None,
             minimum: int | None = None, maximum: int | None = None) -> int | None:
    value = field_value(body, name, required)
    if value is _MISSING:
        return default
    # a Java-style backend coerces 2.0 to 2, but not 2.5
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadError(f"{name} must be an integer")
    if minimum is not None and value < minimum:
        raise PayloadError(f"{name} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise PayloadError(f"{name} must be at most {maximum}")
    return value


def boolean_field(body: dict[str, Any], name: str, *, required: bool, default: bool = False) -> bool:
    value = field_value(body, name, required)
    if value is _MISSING:
        return default
    if not isinstance(value, bool):
        raise PayloadError(f"{name} must be true or false")
    return value


def choice_field(body: dict[str, Any], name: str, choices: tuple[str, ...], default: str | None) -> str | None:
    value = field_value(body, name, required=False)
    if value is _MISSING:
        return default
    if value not in choices:
        raise PayloadError(f"{name} must be one of {', '.join(choices)}")
    return value
