"""Reading a small JSON body that a sender outside the bot posts (Telegram's updates, the service's callbacks)."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web


async def json_object(request: web.Request, max_bytes: int) -> dict[str, Any] | None:
    """The body as a JSON object, None when it is not one; a body over `max_bytes` is refused with 413."""
    if request.content_length is not None and request.content_length > max_bytes:
        raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=request.content_length)
    body = await request.read()
    if len(body) > max_bytes:  # a chunked body states no length up front
        raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=len(body))
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
