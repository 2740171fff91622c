"""Result downloads come only from where results may come from, and only as still JPEG, PNG or WebP images.

Every connection goes to a loopback aiohttp server; host names are answered by a stubbed resolver, so
no test ever uses real DNS or sends a packet past 127.0.0.1 (a refused address is never connected to).
"""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from urllib.parse import unquote

import httpx
import pytest
from aiohttp import web

from bot.jobs.results import (
    MAX_REDIRECTS,
    ResultFetcher,
    ResultGuard,
    ResultRefused,
    ResultUnavailable,
    is_public,
    result_client,
)
from tests.fakes import samples

HTML_WITH_SVG = b"<!doctype html><html><body><h1>Admin</h1><svg width='10'></svg></body></html>"
ELSEWHERE = "https://api.service.test"  # the service, when it is not on this machine


class Cdn:
    """A loopback server with result files, redirects, and a count of what it was asked."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.hold: asyncio.Event | None = None
        self.url = ""
        self.files = {"/r.jpg": samples.jpeg(64, 48), "/r.png": samples.png(64, 48), "/r.webp": samples.webp(64, 48),
                      "/r.gif": samples.still_image("GIF"), "/r.svg": samples.svg(), "/page": HTML_WITH_SVG,
                      "/animated.webp": samples.animated_webp()}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.paths.append(request.path_qs)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if self.hold is not None:
                await self.hold.wait()
            if request.path == "/redirect":
                raise web.HTTPFound(request.query["to"])
            if request.path == "/loop":
                raise web.HTTPFound("/loop")
            data = self.files.get(request.path)
            if data is None:
                raise web.HTTPNotFound()
            # a content type that lies: the bot must look at the bytes, not at the header
            return web.Response(body=data, content_type="image/png")
        finally:
            self.in_flight -= 1


class StubResolver:
    """Answers host names from a table (a list of answers is given out one per call, the last one repeats)."""

    def __init__(self, table: dict[str, list[str] | list[list[str]]]) -> None:
        self.table = table
        self.calls: list[tuple[str, int]] = []

    async def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        answer = self.table.get(host)
        if answer is None:
            raise OSError(f"no such host: {host}")
        if answer and isinstance(answer[0], list):
            return answer.pop(0) if len(answer) > 1 else answer[0]
        return answer  # type: ignore[return-value]


@pytest.fixture
async def cdn() -> AsyncIterator[Cdn]:
    server = Cdn()
    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    yield server
    await runner.cleanup()


async def fetch(guard: ResultGuard, url: str, **options: object):
    async with result_client(guard) as http:
        return await ResultFetcher(http, guard=guard, **options).fetch(url, name="result")


# ---- what comes back -------------------------------------------------------------------------------

@pytest.mark.parametrize(("path", "mime", "file_name"), [
    ("/r.jpg", "image/jpeg", "result.jpg"), ("/r.png", "image/png", "result.png"), ("/r.webp", "image/webp", "result.webp")])
async def test_jpeg_png_and_webp_from_the_service_are_accepted(cdn: Cdn, path: str, mime: str, file_name: str):
    result = await fetch(ResultGuard(trusted=[cdn.url]), cdn.url + path)
    assert (result.mime, result.file_name, result.data) == (mime, file_name, cdn.files[path])


@pytest.mark.parametrize("path", ["/r.gif", "/r.svg", "/page", "/animated.webp"])
async def test_anything_but_a_still_jpeg_png_or_webp_is_refused(cdn: Cdn, path: str):
    with pytest.raises(ResultRefused, match="not a JPEG, PNG or WebP image") as refused:
        await fetch(ResultGuard(trusted=[cdn.url]), cdn.url + path)
    assert refused.value.permanent


# ---- where it comes from ---------------------------------------------------------------------------

@pytest.mark.parametrize("url", ["ftp://cdn.test/r.png", "file:///etc/passwd", "data:image/png;base64,AAAA",
                                 "gopher://cdn.test/", "//cdn.test/r.png", "/r.png"])
async def test_only_http_and_https_links_are_fetched(url: str):
    resolve = StubResolver({"cdn.test": ["127.0.0.1"]})
    with pytest.raises(ResultRefused):
        await fetch(ResultGuard(trusted=[ELSEWHERE], resolve=resolve), url)
    assert resolve.calls == []


async def test_a_loopback_link_is_refused_when_the_service_is_elsewhere(cdn: Cdn):
    with pytest.raises(ResultRefused, match="address the bot does not fetch from"):
        await fetch(ResultGuard(trusted=[ELSEWHERE]), cdn.url + "/r.png")
    assert cdn.paths == []


async def test_loopback_on_another_port_than_the_service_is_refused(cdn: Cdn):
    # the sandbox's own origin is trusted, not every port of its address
    with pytest.raises(ResultRefused):
        await fetch(ResultGuard(trusted=["http://127.0.0.1:1"]), cdn.url + "/r.png")
    assert cdn.paths == []


FORBIDDEN = ["127.0.0.1", "127.8.9.10", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
             "0.0.0.0", "224.0.0.1", "240.0.0.1", "255.255.255.255", "198.18.0.1",
             "::1", "::", "fe80::1", "fc00::1", "fd12:3456::1", "ff02::1", "fec0::1",
             "::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::127.0.0.1",
             "64:ff9b::a00:1", "2002:a00:1::1", "2002:7f00:1::1"]


@pytest.mark.parametrize("address", FORBIDDEN)
async def test_a_host_resolving_to_a_private_loopback_link_local_or_special_address_is_refused(address: str):
    resolve = StubResolver({"cdn.test": [address]})
    with pytest.raises(ResultRefused, match="address the bot does not fetch from"):
        await fetch(ResultGuard(trusted=[ELSEWHERE], resolve=resolve), "https://cdn.test/r.png")
    assert resolve.calls == [("cdn.test", 443)]


@pytest.mark.parametrize("address", ["127.0.0.1", "169.254.169.254", "[::1]", "[::ffff:127.0.0.1]", "[fe80::1]"])
async def test_an_address_written_in_the_link_is_checked_too(address: str):
    resolve = StubResolver({})
    with pytest.raises(ResultRefused):
        await fetch(ResultGuard(trusted=[ELSEWHERE], resolve=resolve), f"http://{address}/r.png")
    assert resolve.calls == []


async def test_one_forbidden_address_among_public_ones_is_enough_to_refuse():
    resolve = StubResolver({"cdn.test": ["93.184.216.34", "10.0.0.7"]})
    with pytest.raises(ResultRefused):
        await fetch(ResultGuard(trusted=[ELSEWHERE], resolve=resolve), "https://cdn.test/r.png")


def test_public_addresses_are_public():
    for text in ("93.184.216.34", "8.8.8.8", "2001:4860:4860::8888", "2606:4700::1111", "::ffff:93.184.216.34"):
        assert is_public(ipaddress.ip_address(text)), text
    for text in FORBIDDEN:
        assert not is_public(ipaddress.ip_address(text)), text


async def test_a_host_that_does_not_resolve_is_worth_another_try():
    with pytest.raises(ResultUnavailable) as unavailable:
        await fetch(ResultGuard(trusted=[ELSEWHERE], resolve=StubResolver({})), "https://gone.test/r.png")
    assert not isinstance(unavailable.value, ResultRefused) and not unavailable.value.permanent


async def test_the_connection_goes_to_the_checked_address_and_never_to_a_second_answer(cdn: Cdn):
    """DNS rebinding: the first answer is public (and is never connected to), the next one loopback."""
    port = int(cdn.url.rsplit(":", 1)[1])
    resolve = StubResolver({"cdn.test": [["93.184.216.34"], ["127.0.0.1"]]})
    with pytest.raises(ResultRefused, match="address the bot does not fetch from"):
        await fetch(ResultGuard(trusted=[ELSEWHERE], resolve=resolve), f"http://cdn.test:{port}/r.png")
    assert len(resolve.calls) == 2  # the check, then the connection's own resolution, which refused
    assert cdn.paths == []


async def test_the_service_host_name_connects_through_the_guarded_resolver(cdn: Cdn):
    port = int(cdn.url.rsplit(":", 1)[1])
    service = f"http://service.test:{port}"
    resolve = StubResolver({"service.test": ["127.0.0.1"]})
    result = await fetch(ResultGuard(trusted=[service], resolve=resolve), service + "/r.png")
    assert result.mime == "image/png" and cdn.paths == ["/r.png"]
    assert resolve.calls == [("service.test", port)]  # the connection asked the stub, not the system


# ---- the allowlist ---------------------------------------------------------------------------------

async def test_with_an_allowlist_only_its_hosts_and_the_static_host_are_fetched(cdn: Cdn):
    resolve = StubResolver({"cdn.example": ["93.184.216.34"], "static.example": ["93.184.216.35"],
                            "other.example": ["93.184.216.36"]})
    guard = ResultGuard(trusted=[cdn.url], allowed_hosts=["CDN.example"], static_url="https://static.example/x",
                        resolve=resolve)
    await guard.check(httpx.URL("https://cdn.example/r.png"))
    await guard.check(httpx.URL("https://static.example/sandbox/r.png"))
    with pytest.raises(ResultRefused, match="host the bot does not fetch from"):
        await guard.check(httpx.URL("https://other.example/r.png"))
    # even the service's own (trusted) origin, when it is not on the list
    with pytest.raises(ResultRefused, match="host the bot does not fetch from"):
        await fetch(guard, cdn.url + "/r.png")
    assert cdn.paths == [] and ("other.example", 443) not in resolve.calls


async def test_an_allowlisted_host_must_still_resolve_to_public_addresses():
    guard = ResultGuard(trusted=[ELSEWHERE], allowed_hosts=["cdn.example"],
                        resolve=StubResolver({"cdn.example": ["10.0.0.1"]}))
    with pytest.raises(ResultRefused, match="address"):
        await guard.check(httpx.URL("https://cdn.example/r.png"))


async def test_an_allowlisted_loopback_service_is_fetched(cdn: Cdn):
    guard = ResultGuard(trusted=[cdn.url], allowed_hosts=["127.0.0.1"])
    assert (await fetch(guard, cdn.url + "/r.jpg")).mime == "image/jpeg"


# ---- redirects -------------------------------------------------------------------------------------

async def test_a_redirect_inside_the_service_is_followed(cdn: Cdn):
    result = await fetch(ResultGuard(trusted=[cdn.url]), cdn.url + "/redirect?to=/r.webp")
    assert result.mime == "image/webp" and cdn.paths == ["/redirect?to=/r.webp", "/r.webp"]


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://[::1]:9/x",
                                    "http://internal.test/admin", "file:///etc/passwd"])
async def test_a_redirect_to_a_forbidden_address_is_refused(cdn: Cdn, target: str):
    port = int(cdn.url.rsplit(":", 1)[1])
    # the first hop's host is trusted (it is on this machine); its redirect is checked like any link
    guard = ResultGuard(trusted=[f"http://cdn.test:{port}"], resolve=StubResolver({"cdn.test": ["127.0.0.1"],
                                                                                   "internal.test": ["10.0.0.5"]}))
    with pytest.raises(ResultRefused):
        await fetch(guard, f"http://cdn.test:{port}/redirect?to={target}")
    # one request, to the first hop only (the transport may percent-encode the brackets of an IPv6 host)
    assert [unquote(path) for path in cdn.paths] == [f"/redirect?to={target}"]


async def test_a_redirect_loop_ends(cdn: Cdn):
    with pytest.raises(ResultRefused, match="redirected too many times"):
        await fetch(ResultGuard(trusted=[cdn.url]), cdn.url + "/loop")
    assert len(cdn.paths) == MAX_REDIRECTS + 1


# ---- bounded work ----------------------------------------------------------------------------------

async def test_downloads_at_once_are_bounded(cdn: Cdn):
    cdn.hold = asyncio.Event()
    guard = ResultGuard(trusted=[cdn.url])
    async with result_client(guard) as http:
        fetcher = ResultFetcher(http, guard=guard, concurrency=2)
        downloads = [asyncio.create_task(fetcher.fetch(cdn.url + "/r.png", name=f"r{i}")) for i in range(6)]
        for _ in range(50):
            await asyncio.sleep(0.01)
        assert cdn.in_flight == 2
        cdn.hold.set()
        results = await asyncio.gather(*downloads)
    assert len(results) == 6 and cdn.most_in_flight == 2


async def test_a_result_over_the_size_cap_is_refused(cdn: Cdn):
    with pytest.raises(ResultUnavailable, match="larger than the bot handles") as unavailable:
        await fetch(ResultGuard(trusted=[cdn.url]), cdn.url + "/r.png", max_bytes=100)
    assert unavailable.value.permanent
