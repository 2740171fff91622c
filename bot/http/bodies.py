"""Reading a JSON body that a sender outside the bot posts (Telegram's updates, the service's callbacks, the Mini App).

The body is read in chunks and refused with 413 as soon as it passes its cap, stated length or not, so a
chunked upload never costs more than the cap. Its JSON is parsed only when its nesting is shallow: Python's
parser recurses once per level and gives up with a RecursionError (a 500 with a traceback) somewhere past a
thousand, and no sender of ours nests deeper than a few levels.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from aiohttp import web

#: levels of arrays and objects a body may nest (a Telegram update with a reply inside a reply needs about 10)
MAX_DEPTH = 32
#: seconds a body may take to arrive (8 MB on a slow phone line takes well under this)
READ_TIMEOUT_S = 60.0
#: brackets a body may hold in all, outside its strings: a bound on the depth scan, far above any real body
MAX_BRACKETS = 20_000
# a JSON string with its escapes, in the unrolled form: runs of plain characters are matched in C
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


async def read_capped(request: web.Request, max_bytes: int, timeout_s: float = READ_TIMEOUT_S) -> bytes:
    """The whole body; 413 as soon as it is over `max_bytes`, whether or not it said its length up front, and 408
    when it takes longer than `timeout_s` (a body sent a byte at a time would hold its slot for ever)."""
    if request.content_length is not None and request.content_length > max_bytes:
        raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=request.content_length)
    chunks, size = [], 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.content.iter_any():
                size += len(chunk)
                if size > max_bytes:  # a chunked body states no length up front
                    raise web.HTTPRequestEntityTooLarge(max_size=max_bytes, actual_size=size)
                chunks.append(chunk)
    except TimeoutError:
        raise web.HTTPRequestTimeout() from None
    return b"".join(chunks)


def nesting(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings do not count).

    Over MAX_BRACKETS brackets in all counts as too deep, so the scan is bounded whatever the body.
    """
    opening = body.count(b"[") + body.count(b"{")
    if opening <= 1:
        return opening  # the common case of a flat object: no scan at all
    outside = _STRING.sub(b"", body)
    if outside.count(b"[") + outside.count(b"{") > MAX_BRACKETS:
        return MAX_BRACKETS
    depth = deepest = 0
    for bracket in _BRACKET.findall(outside):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def parse_object(body: bytes, max_depth: int = MAX_DEPTH) -> dict[str, Any] | None:
    """The body as a JSON object; None when it is not one, or nests deeper than `max_depth`."""
    if nesting(body) > max_depth:
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # ValueError covers bad UTF-8 and integers too long to convert
        return None
    return value if isinstance(value, dict) else None


async def json_object(request: web.Request, max_bytes: int, max_depth: int = MAX_DEPTH) -> dict[str, Any] | None:
    """The body as a JSON object, None when it is not one; a body over `max_bytes` is refused with 413."""
    return parse_object(await read_capped(request, max_bytes), max_depth)
