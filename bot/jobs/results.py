"""Downloading result images, only from where the service's results may come from, promptly and with caps.

The service answers with result URLs, and the bot fetches them: whoever controls those URLs (the
service, or anyone between it and the bot) could otherwise make the bot fetch its own network's
pages and send them to a chat. So a result URL is fetched only when

- its scheme is http or https;
- its host is on AIART_RESULT_HOSTS (plus the host of AIART_STATIC_URL), when that list is set;
- every address its host resolves to is public (no private, loopback, link-local, multicast,
  reserved or unspecified range, IPv4 or IPv6, including IPv4 addresses inside IPv6 ones), unless
  the URL's origin (scheme, host, port) is that of the service itself or of its static URL (the
  embedded sandbox and the tests serve results from loopback);
- each redirect passes the same checks (the fetcher follows at most MAX_REDIRECTS itself);
- and what comes back is a still JPEG, PNG or WebP image, as Pillow reads its header; or, for a video
  operation, an MP4 that PyAV reads (bot.videos), written to a file as it arrives (never whole in
  memory) and not read on past Telegram's upload limit: a larger one is linked, not sent.

The addresses are checked twice: before the request (for a clear refusal), and by the resolver of
the connection pool that `result_client` builds, which hands the connection only addresses that
pass, so a name that resolves differently the second time (DNS rebinding) still cannot reach a
forbidden address: the connection goes to an address that was checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import socket
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any

import httpx
from aiohttp.abc import AbstractResolver, ResolveResult

from bot.images import ImageLimits, ImageRejected, inspect
from bot.jobs.notifier import ResultFile
from bot.transport import AiohttpTransport
from bot.videos import VideoRejected, probe

MAX_RESULT_BYTES = 50 * 1024 * 1024
#: the largest video a bot may upload to Telegram (sendVideo); a larger one is sent as a link
VIDEO_UPLOAD_BYTES = 50 * 1024 * 1024
MAX_REDIRECTS = 5
#: result downloads at once across all jobs (a headshot alone has up to ten results of up to 50 MB)
DOWNLOAD_CONCURRENCY = 4
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_MIME = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}
_SUFFIX = {"JPEG": "jpg", "PNG": "png", "WEBP": "webp"}
#: what a result must be: a still JPEG, PNG or WebP (only its header is read; Telegram checks sizes)
RESULT_LIMITS = ImageLimits(max_bytes=MAX_RESULT_BYTES, max_pixels=20_000 * 20_000, min_side=1, max_aspect=10_000.0)
#: the NAT64 prefix whose last 32 bits are an IPv4 address (RFC 6052)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")

#: resolves (host, port) to IP address strings; injectable so tests never use real DNS
Resolve = Callable[[str, int], Awaitable[Sequence[str]]]
Address = ipaddress.IPv4Address | ipaddress.IPv6Address


class ResultUnavailable(Exception):
    """A result could not be downloaded; `permanent` when trying again cannot help."""

    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


class ResultRefused(ResultUnavailable):
    """A result URL the bot does not fetch from (its scheme, host or address), or content that is not an image."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason, permanent=True)


class AddressRefused(OSError):
    """Raised by the guarded resolver: the host resolved only to addresses the bot does not connect to."""


async def system_resolve(host: str, port: int) -> list[str]:
    """The host's addresses from the system resolver."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def is_public(address: Address) -> bool:
    """Whether the bot may connect to `address` for a result: a global unicast address, whatever it embeds."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:  # a connection to it goes to the IPv4 address
            return is_public(address.ipv4_mapped)
        embedded = [address.sixtofour, address.teredo[1] if address.teredo else None,
                    ipaddress.IPv4Address(int(address) & 0xFFFFFFFF) if address in _NAT64 else None]
        if any(inner is not None and not is_public(inner) for inner in embedded):
            return False
        if address.is_site_local:
            return False
    return address.is_global and not (address.is_private or address.is_loopback or address.is_link_local
                                      or address.is_multicast or address.is_reserved or address.is_unspecified)


def _address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    port = url.port or {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host.lower().rstrip("."), port


class ResultGuard:
    """Decides which result URLs and addresses the bot may fetch from (see the module docstring)."""

    def __init__(self, *, trusted: Iterable[str] = (), allowed_hosts: Iterable[str] = (), static_url: str | None = None,
                 resolve: Resolve = system_resolve) -> None:
        """`trusted`: the service's own base URLs, whose origins may be on any address; `allowed_hosts`:
        when not empty, the only hosts fetched from (the static URL's host is always added)."""
        self._trusted = {_origin(httpx.URL(url)) for url in trusted}
        self._trusted_hosts = {(host, port) for _, host, port in self._trusted}
        allowed = {host.strip().lower().rstrip(".") for host in allowed_hosts if host.strip()}
        if allowed and static_url:
            allowed.add(httpx.URL(static_url).host.lower())
        self._allowed = frozenset(allowed)
        self._resolve = resolve

    def __repr__(self) -> str:
        return f"ResultGuard(trusted={sorted(self._trusted)!r}, allowed_hosts={sorted(self._allowed)!r})"

    async def check(self, url: httpx.URL) -> None:
        """Raise ResultRefused unless `url` may be fetched (resolving its host to check its addresses)."""
        if url.scheme not in ("http", "https"):
            raise ResultRefused("the service gave a result link that is not http(s)")
        if not url.host:
            raise ResultRefused("the service gave a result link without a host")
        scheme, host, port = _origin(url)
        if self._allowed and host not in self._allowed:
            raise ResultRefused("the service gave a result link on a host the bot does not fetch from")
        if (scheme, host, port) in self._trusted:
            return
        literal = _address(host.strip("[]"))
        if literal is not None:
            addresses = [literal]
        else:
            try:
                addresses = [address for text in await self._resolve(host, port or 0)
                             if (address := _address(text)) is not None]
            except OSError as error:
                raise ResultUnavailable(f"the result's host could not be resolved ({type(error).__name__})",
                                        permanent=False) from error
        if not addresses or not all(is_public(address) for address in addresses):
            raise ResultRefused("the service gave a result link to an address the bot does not fetch from")

    async def connectable(self, host: str, port: int) -> list[Address]:
        """The addresses of `host` a connection may go to; AddressRefused when there are none."""
        key = (host.lower().rstrip("."), port)
        addresses = [address for text in await self._resolve(host, port) if (address := _address(text)) is not None]
        if key not in self._trusted_hosts:
            addresses = [address for address in addresses if is_public(address)]
        if not addresses:
            raise AddressRefused(f"no address of {host} may be connected to")
        return addresses

    def resolver(self) -> AbstractResolver:
        """An aiohttp resolver that hands a connection only the addresses `connectable` allows."""
        return _GuardedResolver(self)


class _GuardedResolver(AbstractResolver):
    """Pins connections to checked addresses: aiohttp connects to what this returns, nothing else."""

    def __init__(self, guard: ResultGuard) -> None:
        self._guard = guard

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list[ResolveResult]:
        results = []
        for address in await self._guard.connectable(host, port):
            address_family = socket.AF_INET if address.version == 4 else socket.AF_INET6
            if family not in (socket.AF_UNSPEC, address_family):
                continue
            results.append(ResolveResult(hostname=host, host=str(address), port=port, family=address_family,
                                         proto=0, flags=socket.AI_NUMERICHOST | socket.AI_NUMERICSERV))
        if not results:
            raise AddressRefused(f"no address of {host} may be connected to")
        return results

    async def close(self) -> None:
        return None


def result_client(guard: ResultGuard, *, max_connections: int = 10) -> httpx.AsyncClient:
    """An HTTP client for result downloads whose connections go only to addresses the guard allows."""
    transport = AiohttpTransport(httpx.Limits(max_connections=max_connections), resolver=guard.resolver())
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(30.0, connect=10.0), follow_redirects=False)


def _refused_address(error: BaseException) -> bool:
    """Whether the guarded resolver refused the connection somewhere down `error`'s chain of causes."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, AddressRefused) or isinstance(getattr(seen, "os_error", None), AddressRefused):
            return True
        seen = seen.__cause__
    return False


def _spool(folder: Path | None, name: str) -> tuple[IO[bytes], Path]:
    """A new file for a downloaded video, kept after closing (delivery reads it, then `discard`s it)."""
    handle = tempfile.NamedTemporaryFile(prefix=f"{name}-", suffix=".mp4", dir=folder, delete=False)  # noqa: SIM115
    return handle, Path(handle.name)


def discard(*paths: Path | None) -> None:
    """Delete downloaded videos' files, those still there."""
    for path in paths:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


class ResultFetcher:
    """Fetches result URLs that the guard allows (no credentials are sent: they are public CDN links).

    At most `concurrency` downloads run at once across all jobs; each is capped at `max_bytes`.
    """

    def __init__(self, http: httpx.AsyncClient, *, guard: ResultGuard, max_bytes: int = MAX_RESULT_BYTES,
                 concurrency: int = DOWNLOAD_CONCURRENCY) -> None:
        self._http = http
        self._guard = guard
        self._max_bytes = max_bytes
        self._slots = asyncio.Semaphore(concurrency)

    async def fetch(self, url: str, *, name: str) -> ResultFile:
        """Download one result; `name` is the file name without suffix."""
        async with self._slots:
            data = await self._download(url)
        try:
            info = inspect(data, RESULT_LIMITS)
        except ImageRejected as error:
            raise ResultRefused("the service's result is not a JPEG, PNG or WebP image") from error
        return ResultFile(data=data, file_name=f"{name}.{_SUFFIX[info.format]}", mime=_MIME[info.format])

    async def fetch_video(self, url: str, *, name: str, folder: Path | None = None,
                          limit: int = VIDEO_UPLOAD_BYTES) -> ResultFile:
        """Download one video result into a file under `folder` (the caller deletes `path`); one larger than
        `limit` is not read to its end and comes back without a file, to be sent as a link."""
        handle, path = await asyncio.to_thread(_spool, folder, name)
        try:
            with handle:
                async with self._slots:
                    size = await self._download(url, sink=handle, limit=limit)
            if size is None:
                await asyncio.to_thread(discard, path)
                return ResultFile(b"", f"{name}.mp4", "video/mp4", source_url=url)
            try:
                info = await asyncio.to_thread(probe, path)
            except VideoRejected as error:
                raise ResultRefused(f"the service's result is not an MP4 video ({error})") from error
        except BaseException:
            await asyncio.shield(asyncio.to_thread(discard, path))
            raise
        return ResultFile(b"", f"{name}.mp4", "video/mp4", path=path, video=info, size=size, source_url=url)

    async def _download(self, url: str, *, sink: IO[bytes] | None = None, limit: int | None = None) -> Any:
        try:
            target = httpx.URL(url)
        except httpx.InvalidURL as error:
            raise ResultRefused("the service gave a result link that is not a valid URL") from error
        for _ in range(MAX_REDIRECTS + 1):
            await self._guard.check(target)
            try:
                async with self._http.stream("GET", target, follow_redirects=False) as response:
                    location = response.headers.get("Location")
                    if response.status_code in _REDIRECTS and location:
                        target = response.url.join(location)
                        continue
                    if response.status_code in (404, 410, 403):
                        raise ResultUnavailable(f"result link answered {response.status_code}", permanent=True)
                    if response.status_code != 200:
                        raise ResultUnavailable(f"result link answered {response.status_code}", permanent=False)
                    if sink is not None:
                        return await self._write(response, sink, limit or self._max_bytes)
                    return await self._read(response)
            except httpx.InvalidURL as error:
                raise ResultRefused("the service gave a result link that is not a valid URL") from error
            except httpx.HTTPError as error:
                if _refused_address(error):
                    raise ResultRefused("the service gave a result link to an address the bot does not fetch from") \
                        from error
                raise ResultUnavailable(f"result download failed: {type(error).__name__}", permanent=False) from error
        raise ResultRefused("the result link redirected too many times")

    async def _write(self, response: httpx.Response, sink: IO[bytes], limit: int) -> int | None:
        """Copy the body into `sink` as it arrives; its size, or None once it passes `limit` (then read no more)."""
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > limit:
            return None
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                return None
            sink.write(chunk)
        return size

    async def _read(self, response: httpx.Response) -> bytes:
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > self._max_bytes:
                raise ResultUnavailable("result is larger than the bot handles", permanent=True)
            chunks.append(chunk)
        return b"".join(chunks)
