"""PTB's request layer never puts the Bot API URL (it holds the bot token) into an error's text."""

from __future__ import annotations

import asyncio
import socket
import traceback
from collections.abc import AsyncIterator

import aiohttp
import pytest
from telegram.error import NetworkError, TimedOut

from bot.tg.request import URL_PLACEHOLDER, AiohttpRequest, error_text

TOKEN = "123456:SECRET-token-part"


@pytest.fixture
async def ptb_request() -> AsyncIterator[AiohttpRequest]:
    request = AiohttpRequest(connections=1, connect_timeout=0.3, read_timeout=0.3, pool_timeout=0.2)
    await request.initialize()
    yield request
    await request.shutdown()


def leaked(error: BaseException) -> bool:
    """Whether the token is anywhere in the error: its text, or a traceback as a log would print it."""
    printed = "".join(traceback.format_exception(error))
    return "SECRET" in str(error) or "SECRET" in printed


async def test_a_connect_timeout_names_no_url(ptb_request: AiohttpRequest):
    """A loopback listener whose queue is full: connections are never accepted, connecting times out."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    try:
        for _ in range(4):  # fill the accept queue; later SYNs are dropped
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        await asyncio.sleep(0.05)
        with pytest.raises(TimedOut) as raised:
            await ptb_request.do_request(f"http://127.0.0.1:{port}/bot{TOKEN}/getMe", "POST")
    finally:
        for filler in fillers:
            filler.close()
        listener.close()
    assert "ConnectionTimeoutError" in raised.value.message
    assert not leaked(raised.value)


async def test_waiting_for_a_connection_from_the_pool_names_no_url(ptb_request: AiohttpRequest):
    """The only pooled connection is held by a call a loopback server never answers; the next one times out."""
    hold = asyncio.Event()

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await hold.wait()
        writer.close()

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/bot{TOKEN}"
    try:
        first = asyncio.create_task(ptb_request.do_request(f"{url}/getUpdates", "POST", read_timeout=5))
        await asyncio.sleep(0.1)
        with pytest.raises(TimedOut) as raised:
            await ptb_request.do_request(f"{url}/sendMessage", "POST")
        hold.set()
        with pytest.raises(NetworkError) as unanswered:
            await first
    finally:
        server.close()
    assert not leaked(raised.value) and not leaked(unanswered.value)


@pytest.mark.parametrize("error", [
    aiohttp.ConnectionTimeoutError(f"Connection timeout to host https://api.telegram.org/bot{TOKEN}/getMe"),
    aiohttp.ServerTimeoutError(f"Timeout on https://api.telegram.org/bot{TOKEN}/getMe"),
    aiohttp.ClientPayloadError(f"Response payload is not completed for /bot{TOKEN}/getMe"),
    aiohttp.ClientOSError("failed https://api.telegram.org/bot123456%3ASECRET-token-part/getMe"),
    aiohttp.InvalidURL(f"https://api.telegram.org/bot{TOKEN}/getMe"),
])
def test_error_text_takes_out_the_url_in_every_form(error: BaseException):
    text = error_text(error, f"https://api.telegram.org/bot{TOKEN}/getMe")
    assert "SECRET" not in text and type(error).__name__ in text
    assert URL_PLACEHOLDER in text or isinstance(error, aiohttp.InvalidURL)
