"""Small JSON bodies from outside: an object or None, and anything over the limit refused, stated length or not."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from bot.http.bodies import MAX_BRACKETS, json_object, nesting, parse_object, read_capped

LIMIT = 64


@pytest.fixture
async def server():
    async def echo(request: web.Request) -> web.Response:
        body = await json_object(request, LIMIT)
        return web.json_response({"object": body})

    app = web.Application()
    app.router.add_post("/", echo)
    async with TestServer(app, host="127.0.0.1") as running:
        yield running


async def post(server: TestServer, data) -> tuple[int, object]:
    async with aiohttp.ClientSession() as session, session.post(server.make_url("/"), data=data) as response:
        return response.status, (await response.json())["object"] if response.status == 200 else None


async def test_an_object_is_read_and_anything_else_is_none(server):
    assert await post(server, json.dumps({"taskId": "t1"}).encode()) == (200, {"taskId": "t1"})
    assert await post(server, b"[1, 2]") == (200, None)
    assert await post(server, b"{not json") == (200, None)
    assert await post(server, b"") == (200, None)


async def test_a_body_over_the_limit_is_refused_whether_or_not_it_states_its_length(server):
    big = json.dumps({"taskId": "x" * LIMIT}).encode()
    assert (await post(server, big))[0] == 413

    async def chunks():
        yield big[:10]
        yield big[10:]

    assert (await post(server, chunks()))[0] == 413


async def test_deep_nesting_is_none_not_a_recursion_error(server):
    """Issue 28, finding 7: a deeply nested body made the parser raise RecursionError (a 500 with a traceback)."""
    for body in (b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 50_000 + b"1" + b"}" * 50_000):
        assert parse_object(body) is None
    assert parse_object(b'{"a": ' + b"[" * 31 + b"]" * 31 + b"}") is not None
    assert parse_object(b'{"a": ' + b"[" * 32 + b"]" * 32 + b"}") is None
    assert parse_object(b'{"a": ' + b"[" * 3 + b"]" * 3 + b"}", max_depth=3) is None


def test_brackets_inside_strings_do_not_count_and_the_scan_is_bounded():
    quoted = json.dumps({"prompt": "[" * 5000 + '\\"{' * 100, "b": [[1]]}).encode()
    assert nesting(quoted) == 3
    assert parse_object(quoted) == json.loads(quoted)
    assert nesting(b"[]" * (MAX_BRACKETS + 1)) == MAX_BRACKETS  # flat but too many: refused, not scanned


def test_odd_numbers_and_bad_text_are_none():
    for body in (b'{"n": 1' + b"0" * 5000 + b"}", b"\xff\xfe{}", b'{"a": "\\ud800"}' b"\x00", b"{" * 10):
        assert parse_object(body) is None


async def test_a_body_sent_too_slowly_is_refused_with_408():
    """A body sent a byte at a time would hold a large request's slot for ever."""
    async def read(request: web.Request) -> web.Response:
        return web.json_response({"size": len(await read_capped(request, 1024, timeout_s=0.3))})

    app = web.Application()
    app.router.add_post("/", read)

    async def slowly():
        for _ in range(20):
            yield b" "
            await asyncio.sleep(0.1)

    async with TestServer(app, host="127.0.0.1") as running, aiohttp.ClientSession() as session:
        async with session.post(running.make_url("/"), data=slowly()) as response:
            assert response.status == 408
        async with session.post(running.make_url("/"), data=b"x" * 100) as response:
            assert (response.status, await response.json()) == (200, {"size": 100})
