"""The HTTP connections under the bot's clients: aiohttp's pool, through httpx-aiohttp for httpx.

The service client and the result downloads use httpx; their connections go through httpx-aiohttp's
AiohttpTransport (aiohttp's client costs a fraction of httpcore's CPU per request, bench/README.md).
httpx still builds the requests, follows redirects, decodes content and raises its own exceptions.

One thing is corrected on top of the library: which httpx exception a failure becomes. httpx-aiohttp
maps every aiohttp.ClientConnectionError to httpx.ConnectTimeout, including a server that drops the
connection after reading a request, and lets other aiohttp errors (a malformed answer) escape with
the URL in their text. The service client resends a POST only on a connect failure (the task surely
was not created), so that mapping would pay for a task twice; here the error is chosen from what
aiohttp raised, as the table in `as_httpx_error` says, with a message that leaves out the URL.

PTB's networking on aiohttp (bot/tg/request.py) shares `client_session`, `client_timeout` and `describe`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
import httpx_aiohttp
from aiohttp.abc import AbstractResolver


def client_session(max_connections: int, *, keepalive_s: float = 15.0, resolver: AbstractResolver | None = None,
                   **options: Any) -> aiohttp.ClientSession:
    """An aiohttp session with no cookie jar, trusting the certificates httpx would (0 connections: no cap);
    `resolver`, when given, picks the addresses its connections go to."""
    connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0, keepalive_timeout=keepalive_s,
                                     ssl=httpx.create_ssl_context(), resolver=resolver)
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(), **options)


def client_timeout(*, connect: float | None, read: float | None, pool: float | None) -> aiohttp.ClientTimeout:
    """httpx's kinds of timeout in aiohttp's terms (waiting for a free connection counts as connecting)."""
    return aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read,
                                 connect=None if connect is None or pool is None else connect + pool)


def describe(error: BaseException) -> str:
    """What aiohttp raised, without the request's URL: a Bot API URL holds the bot token."""
    if isinstance(error, aiohttp.ClientResponseError):  # its str() ends with the URL
        return f"{type(error).__name__}: {error.status} {error.message}"
    if isinstance(error, aiohttp.InvalidURL):
        return f"{type(error).__name__}: not a valid URL"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def as_httpx_error(error: BaseException, request: httpx.Request) -> httpx.TransportError:
    """The httpx exception for what aiohttp raised: ConnectError/ConnectTimeout only when nothing was sent."""
    message = describe(error)
    if isinstance(error, aiohttp.ConnectionTimeoutError):  # also the wait for a free connection
        return httpx.ConnectTimeout(message, request=request)
    if isinstance(error, aiohttp.SocketTimeoutError | asyncio.TimeoutError):
        return httpx.ReadTimeout(message, request=request)
    if isinstance(error, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message, request=request)
    if isinstance(error, aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(message, request=request)
    return httpx.ReadError(message, request=request)


def _reraised(error: Exception, request: httpx.Request) -> Exception:
    """`error` with its httpx class and message chosen from the aiohttp error under it (others unchanged)."""
    cause = error if isinstance(error, aiohttp.ClientError | asyncio.TimeoutError) else error.__cause__
    if isinstance(cause, aiohttp.ClientError | asyncio.TimeoutError):
        return as_httpx_error(cause, request)
    return error


#: what the library raises: httpx's errors (mapped by it) and aiohttp's (not mapped)
_FAILURES = (httpx.TransportError, aiohttp.ClientError, asyncio.TimeoutError)


class _Body(httpx.AsyncByteStream):
    """A response body whose read errors are chosen as the transport's are."""

    def __init__(self, stream: httpx.AsyncByteStream, request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except _FAILURES as error:
            raise _reraised(error, self._request) from error

    async def aclose(self) -> None:
        await self._stream.aclose()


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx-aiohttp's transport over a session of `client_session`, with the error mapping above.

    It keeps at most limits.max_connections open, idle ones for limits.keepalive_expiry. Like the
    library's, it is used by one client: closing it closes its connections for good.
    """

    def __init__(self, limits: httpx.Limits = httpx.Limits(), *, resolver: AbstractResolver | None = None) -> None:
        self._limits = limits
        self._resolver = resolver
        self._inner = httpx_aiohttp.AiohttpTransport(limits=limits, client=self._session)

    def _session(self) -> aiohttp.ClientSession:
        # made on the first request, inside the running loop; httpx keeps the cookies, so aiohttp keeps none
        return client_session(self._limits.max_connections or 0, keepalive_s=self._limits.keepalive_expiry or 15.0,
                              resolver=self._resolver)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        try:
            response = await self._inner.handle_async_request(request)
        except _FAILURES as error:
            raise _reraised(error, request) from error
        assert isinstance(response.stream, httpx.AsyncByteStream)
        return httpx.Response(response.status_code, headers=response.headers.raw,
                              stream=_Body(response.stream, request), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __repr__(self) -> str:
        return f"AiohttpTransport(max_connections={self._limits.max_connections})"
