"""An httpx transport that sends its requests through aiohttp's connection pool.

The service client and the result downloads use httpx. Its default transport (httpcore with h11 over
anyio) cost about 1.3 ms of CPU per request on this machine with twenty requests in flight, against
about 0.1 ms for aiohttp's client, and a job makes several requests. aiohttp is a dependency already
(the sandbox, the media server, PTB's networking in bot/tg/request.py), so only the wire layer changes:
httpx still builds the requests, follows redirects, decodes content and raises its own exceptions.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import httpx
from aiohttp.abc import AbstractResolver
from yarl import URL

#: headers aiohttp works out itself from the body it is given
_BODY_FRAMING = frozenset({b"content-length", b"transfer-encoding"})
_CHUNK = 64 * 1024


def client_session(max_connections: int, *, keepalive_s: float = 15.0, resolver: AbstractResolver | None = None,
                   **options: Any) -> aiohttp.ClientSession:
    """An aiohttp session with no cookie jar, trusting the certificates httpx would (0 connections: no cap);
    `resolver`, when given, picks the addresses its connections go to."""
    connector = aiohttp.TCPConnector(limit=max_connections, limit_per_host=0, keepalive_timeout=keepalive_s,
                                     ssl=httpx.create_ssl_context(), resolver=resolver)
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar(), **options)


def describe(error: BaseException) -> str:
    """What aiohttp raised, without the request's URL: a Bot API URL holds the bot token."""
    if isinstance(error, aiohttp.ClientResponseError):  # its str() ends with the URL
        return f"{type(error).__name__}: {error.status} {error.message}"
    if isinstance(error, aiohttp.InvalidURL):
        return f"{type(error).__name__}: not a valid URL"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


def _as_httpx_error(error: BaseException, request: httpx.Request) -> httpx.TransportError:
    """The httpx exception callers already handle for what aiohttp raised."""
    message = describe(error)
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return httpx.ConnectTimeout(message, request=request)
    if isinstance(error, aiohttp.SocketTimeoutError | asyncio.TimeoutError):
        return httpx.ReadTimeout(message, request=request)
    if isinstance(error, aiohttp.ClientConnectorError):
        return httpx.ConnectError(message, request=request)
    if isinstance(error, aiohttp.ServerDisconnectedError | aiohttp.ClientResponseError):
        return httpx.RemoteProtocolError(message, request=request)
    return httpx.ReadError(message, request=request)


def client_timeout(*, connect: float | None, read: float | None, pool: float | None) -> aiohttp.ClientTimeout:
    """httpx's kinds of timeout in aiohttp's terms (waiting for a free connection counts as connecting)."""
    return aiohttp.ClientTimeout(total=None, sock_connect=connect, sock_read=read,
                                 connect=None if connect is None or pool is None else connect + pool)


def _timeout(request: httpx.Request) -> aiohttp.ClientTimeout:
    """The request's own timeouts, as httpx set them."""
    timeouts = request.extensions.get("timeout", {})
    return client_timeout(connect=timeouts.get("connect"), read=timeouts.get("read"), pool=timeouts.get("pool"))


class _ResponseStream(httpx.AsyncByteStream):
    """An aiohttp response body as httpx reads it; closing it hands the connection back (or drops it)."""

    def __init__(self, response: aiohttp.ClientResponse, request: httpx.Request) -> None:
        self._response = response
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_chunked(_CHUNK):
                yield chunk
        except (aiohttp.ClientError, asyncio.TimeoutError) as error:
            raise _as_httpx_error(error, self._request) from error

    async def aclose(self) -> None:
        if self._response.content.at_eof():
            self._response.release()  # read to the end: the connection can serve the next request
        else:
            self._response.close()  # unread bytes would corrupt the next response on this connection


class AiohttpTransport(httpx.AsyncBaseTransport):
    """httpx.AsyncBaseTransport over an aiohttp ClientSession, opened on first use and again after aclose().

    It keeps at most limits.max_connections open, idle ones for limits.keepalive_expiry.
    """

    def __init__(self, limits: httpx.Limits = httpx.Limits(), *, resolver: AbstractResolver | None = None) -> None:
        self._limits = limits
        self._resolver = resolver
        self._session: aiohttp.ClientSession | None = None

    def _open_session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # httpx sets the headers, keeps the cookies and decodes the content: aiohttp passes all through
            self._session = client_session(self._limits.max_connections or 0,
                                           keepalive_s=self._limits.keepalive_expiry or 15.0, resolver=self._resolver,
                                           auto_decompress=False, skip_auto_headers=("User-Agent", "Content-Type"))
        return self._session

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        body = await request.aread()
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in request.headers.raw
                   if name.lower() not in _BODY_FRAMING]
        try:
            response = await self._open_session().request(
                request.method, URL(str(request.url), encoded=True), data=body or None, headers=headers,
                allow_redirects=False, timeout=_timeout(request))
        except (aiohttp.ClientError, asyncio.TimeoutError) as error:
            raise _as_httpx_error(error, request) from error
        return httpx.Response(response.status, headers=list(response.raw_headers),
                              stream=_ResponseStream(response, request),
                              extensions={"http_version": b"HTTP/1.1",
                                          "reason_phrase": (response.reason or "").encode("latin-1")})

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def __repr__(self) -> str:
        return f"AiohttpTransport(max_connections={self._limits.max_connections})"

