"""The HTTP layer on aiohttp: httpx-aiohttp under httpx and PTB's request, against a real server on loopback."""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from aiohttp import web
from telegram import Bot, InputFile
from telegram.error import NetworkError, TimedOut

from bot.tg.request import AiohttpRequest
from bot.transport import AiohttpTransport


class Server:
    """A loopback aiohttp server that echoes requests, redirects, compresses, stalls and counts connections."""

    def __init__(self) -> None:
        self.peers: set[tuple[str, int]] = set()
        self.requests: list[dict] = []
        self.stall = asyncio.Event()

    async def echo(self, request: web.Request) -> web.Response:
        self.peers.add(request.transport.get_extra_info("peername"))
        body, fields = b"", {}
        if request.content_type == "multipart/form-data":
            fields = {name: (value.filename, value.file.read()) if isinstance(value, web.FileField) else value
                      for name, value in (await request.post()).items()}
        elif request.content_type.endswith("urlencoded"):
            fields = dict(await request.post())
        else:
            body = await request.read()
        # the headers stay a case-insensitive mapping: httpx-aiohttp sends their names in lower case
        self.requests.append({"method": request.method, "path": request.path_qs, "headers": request.headers.copy(),
                              "body": body, "fields": fields})
        return web.json_response({"ok": True, "path": request.path_qs, "result": {"path": request.path_qs}})

    async def redirect(self, _: web.Request) -> web.Response:
        raise web.HTTPFound("/echo")

    async def gzipped(self, _: web.Request) -> web.Response:
        return web.Response(body=gzip.compress(b"x" * 10_000), headers={"Content-Encoding": "gzip"})

    async def slow(self, _: web.Request) -> web.Response:
        await self.stall.wait()
        return web.Response(text="late")

    async def big(self, _: web.Request) -> web.StreamResponse:
        return web.Response(body=b"y" * 1_000_000)


@pytest.fixture
async def server() -> AsyncIterator[tuple[Server, str]]:
    state = Server()
    app = web.Application()
    app.router.add_route("*", "/echo", state.echo)
    app.router.add_route("*", "/file/{name}", state.echo)
    app.router.add_route("*", "/bot{token}/{method}", state.echo)
    app.router.add_get("/redirect", state.redirect)
    app.router.add_get("/gzip", state.gzipped)
    app.router.add_get("/slow", state.slow)
    app.router.add_get("/big", state.big)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield state, f"http://127.0.0.1:{port}"
    finally:
        state.stall.set()
        await runner.cleanup()


# --- the httpx transport -------------------------------------------------------------------------


async def test_keep_alive_reuses_one_connection(server):
    state, url = server
    async with httpx.AsyncClient(transport=AiohttpTransport()) as client:
        for _ in range(5):
            assert (await client.get(f"{url}/echo")).json()["ok"] is True
    assert len(state.peers) == 1


async def test_httpx_builds_the_request_and_aiohttp_sends_it_unchanged(server):
    state, url = server
    async with httpx.AsyncClient(transport=AiohttpTransport(), headers={"X-API-KEY": "k"}) as client:
        response = await client.post(f"{url}/echo?a=1%2B2&b=x%26y", json={"b": [1, 2]})
    # escapes that carry meaning stay (aiohttp's URL parser does unescape those that do not, such as %2F)
    assert response.status_code == 200 and response.json()["path"] == "/echo?a=1%2B2&b=x%26y"
    sent = state.requests[0]
    assert sent["method"] == "POST" and json.loads(sent["body"]) == {"b": [1, 2]}
    assert sent["headers"]["X-API-KEY"] == "k"
    assert sent["headers"]["Content-Type"] == "application/json"
    assert sent["headers"]["User-Agent"].startswith("python-httpx/")


async def test_redirects_are_followed_by_httpx_and_content_is_decoded_once(server):
    _, url = server
    async with httpx.AsyncClient(transport=AiohttpTransport(), follow_redirects=True) as client:
        redirected = await client.get(f"{url}/redirect")
        compressed = await client.get(f"{url}/gzip")
    assert [r.status_code for r in redirected.history] == [302] and redirected.json()["path"] == "/echo"
    assert compressed.content == b"x" * 10_000


async def test_a_body_left_unread_does_not_spoil_the_next_request(server):
    _, url = server
    async with httpx.AsyncClient(transport=AiohttpTransport()) as client:
        async with client.stream("GET", f"{url}/big") as response:
            async for chunk in response.aiter_bytes():
                assert chunk
                break  # stop early, as the result download does past its size limit
        assert (await client.get(f"{url}/echo")).json()["ok"] is True


async def test_failures_arrive_as_the_httpx_errors_callers_handle(server):
    state, url = server
    async with httpx.AsyncClient(transport=AiohttpTransport(), timeout=httpx.Timeout(0.3)) as client:
        with pytest.raises(httpx.ReadTimeout):
            await client.get(f"{url}/slow")
        with pytest.raises(httpx.ConnectError):
            await client.get("http://127.0.0.1:1/")  # nothing listens on port 1: surely not sent


async def test_a_connection_dropped_after_the_request_is_not_a_connect_failure(server):
    # the service client resends a POST only after a connect failure: this one may have created a task
    async def read_then_hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    listening = await asyncio.start_server(read_then_hang_up, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        async with httpx.AsyncClient(transport=AiohttpTransport()) as client:
            with pytest.raises(httpx.TransportError) as failed:
                await client.post(f"http://127.0.0.1:{port}/v1/aiart/upscale", json={})
        assert not isinstance(failed.value, httpx.ConnectError | httpx.ConnectTimeout)
    finally:
        listening.close()
        await listening.wait_closed()


# --- python-telegram-bot's request ---------------------------------------------------------------


@pytest.fixture
async def ptb_request() -> AsyncIterator[AiohttpRequest]:
    request = AiohttpRequest(connections=4, read_timeout=0.3)
    await request.initialize()
    try:
        yield request
    finally:
        await request.shutdown()


@pytest.mark.filterwarnings("ignore:Please use:telegram.warnings.PTBUserWarning")  # a raw call on purpose
async def test_ptb_parameters_go_as_a_form_and_files_as_multipart(server, ptb_request):
    state, url = server
    bot = Bot("123:abc", base_url=f"{url}/bot", request=ptb_request, get_updates_request=ptb_request)
    answer = await bot.do_api_request("sendMessage", api_kwargs={"chat_id": 5, "text": "hi ü"})
    assert answer == {"path": "/bot123:abc/sendMessage"}
    assert state.requests[-1]["fields"] == {"chat_id": "5", "text": "hi ü"}
    assert state.requests[-1]["headers"]["User-Agent"] == AiohttpRequest.USER_AGENT

    photo = InputFile(b"\xff\xd8jpeg", filename="a.jpg")
    await bot.do_api_request("sendPhoto", api_kwargs={"chat_id": 5, "photo": photo})
    assert state.requests[-1]["fields"] == {"chat_id": "5", "photo": ("a.jpg", b"\xff\xd8jpeg")}
    assert state.requests[-1]["headers"]["Content-Type"].startswith("multipart/form-data")


async def test_ptb_downloads_come_back_as_bytes(server, ptb_request):
    _, url = server
    status, body = await ptb_request.do_request(f"{url}/big", "GET")
    assert status == 200 and body == b"y" * 1_000_000


async def test_ptb_sees_its_own_errors_for_timeouts_and_refusals(server, ptb_request):
    _, url = server
    with pytest.raises(TimedOut):
        await ptb_request.do_request(f"{url}/slow", "GET")
    with pytest.raises(NetworkError):
        await ptb_request.do_request("http://127.0.0.1:1/", "GET")
    uninitialized = AiohttpRequest(connections=1)
    with pytest.raises(RuntimeError):
        await uninitialized.do_request(f"{url}/echo", "GET")


async def test_a_broken_answer_is_reported_without_the_url_and_its_token(ptb_request):
    async def answer_garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 2000 Nonsense\r\n\r\n")
        await writer.drain()
        writer.close()

    listening = await asyncio.start_server(answer_garbage, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        with pytest.raises(NetworkError) as raised:
            await ptb_request.do_request(f"http://127.0.0.1:{port}/bot123:SECRET/getMe", "POST")
        assert "SECRET" not in raised.value.message
        async with httpx.AsyncClient(transport=AiohttpTransport()) as client:
            with pytest.raises(httpx.TransportError) as failed:
                await client.get(f"http://127.0.0.1:{port}/bot123:SECRET/file")
        assert "SECRET" not in str(failed.value)
    finally:
        listening.close()
        await listening.wait_closed()
