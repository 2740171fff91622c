"""An httpx transport whose connection pool checks its idle connections cheaply.

On every request, and again when each response is closed, httpcore's pool asks every pooled
connection whether the server closed it (its socket became readable). Through anyio that question
builds a dict of the socket's attributes and calls getpeername() before it polls the socket: under
load, with a few dozen pooled connections, that scan took about a third of the bot's CPU time per
HTTP request (measured with py-spy in bench/run.py's throughput section). This transport's streams
keep their socket at hand, so the check is a single poll.
"""

from __future__ import annotations

import select
import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

#: what httpcore's pool may hand a backend as socket options
SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


def pooled_transport(**kwargs: Any) -> httpx.AsyncHTTPTransport:
    """httpx.AsyncHTTPTransport(**kwargs) with the cheap idle-connection check."""
    transport = httpx.AsyncHTTPTransport(**kwargs)
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    # httpx offers no way to pass a network backend in: set it on the pool it built. Should a
    # future httpx or httpcore move these, the transport still works, only with the slower check
    # (tests/unit/test_transport.py notices).
    if isinstance(backend, httpcore.AsyncNetworkBackend) and not isinstance(backend, SocketKeepingBackend):
        pool._network_backend = SocketKeepingBackend(backend)  # type: ignore[union-attr]
    return transport


def _is_readable(sock: socket.socket | None) -> bool:
    """Whether a recv() would return at once: data, or the b"" of a closed connection (httpcore's test)."""
    fileno = -1 if sock is None else sock.fileno()
    if fileno < 0:
        return True  # no socket left: as good as closed
    poller = select.poll()
    poller.register(fileno, select.POLLIN)
    return bool(poller.poll(0))


class SocketKeepingStream(httpcore.AsyncNetworkStream):
    """A network stream that remembers its socket for the pool's idle checks."""

    def __init__(self, stream: httpcore.AsyncNetworkStream) -> None:
        self._stream = stream
        self._socket: socket.socket | None = stream.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._stream.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: ssl.SSLContext, server_hostname: str | None = None,
                        timeout: float | None = None) -> httpcore.AsyncNetworkStream:
        return SocketKeepingStream(await self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return _is_readable(self._socket)
        if info == "socket":
            return self._socket
        return self._stream.get_extra_info(info)


class SocketKeepingBackend(httpcore.AsyncNetworkBackend):
    """Wraps a network backend so that its streams remember their sockets."""

    def __init__(self, backend: httpcore.AsyncNetworkBackend) -> None:
        self._backend = backend

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[SocketOption] | None = None) -> httpcore.AsyncNetworkStream:
        return SocketKeepingStream(await self._backend.connect_tcp(host, port, timeout, local_address, socket_options))

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[SocketOption] | None = None) -> httpcore.AsyncNetworkStream:
        return SocketKeepingStream(await self._backend.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._backend.sleep(seconds)
