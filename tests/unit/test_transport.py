"""The pooled transport: the cheap idle check is in place, and pooled connections behave as before."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from bot.transport import SocketKeepingBackend, pooled_transport


def test_the_pool_uses_the_socket_keeping_backend():
    transport = pooled_transport(limits=httpx.Limits(max_connections=4))
    # reaching into httpx here is the point: an httpx or httpcore upgrade that moves these makes the
    # transport silently fall back to the slow check, and this test is what notices
    assert isinstance(transport._pool._network_backend, SocketKeepingBackend)


class Server:
    """A tiny HTTP/1.1 server on loopback that can drop its idle connections."""

    def __init__(self) -> None:
        self.connections = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def drop_all(self) -> None:
        for writer in self.writers:
            writer.close()
        self.writers.clear()


@pytest.fixture
async def server() -> AsyncIterator[tuple[Server, str]]:
    state = Server()
    listening = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield state, f"http://127.0.0.1:{port}/"
    finally:
        listening.close()
        state.drop_all()
        await listening.wait_closed()


async def test_keep_alive_reuses_one_connection(server):
    state, url = server
    async with httpx.AsyncClient(transport=pooled_transport()) as client:
        for _ in range(5):
            assert (await client.get(url)).text == "ok"
    assert state.connections == 1


async def test_a_connection_the_server_closed_is_not_reused(server):
    state, url = server
    async with httpx.AsyncClient(transport=pooled_transport()) as client:
        assert (await client.get(url)).text == "ok"
        state.drop_all()
        await asyncio.sleep(0.05)  # the FIN arrives: the idle socket turns readable
        assert (await client.get(url)).text == "ok"  # a fresh connection, not an error
    assert state.connections == 2
