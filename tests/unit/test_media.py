"""Signed media links: what a link serves, the 404 every expired, tampered or unknown link gets, and the
image hand-off's choice between BASE64, the service's upload and such a link."""

from __future__ import annotations

import base64
import re
from urllib.parse import urlsplit

import httpx
import pytest
from aiohttp import web

from bot.aiart import AiartClient
from bot.aiart.client import RetryPolicy
from bot.aiart.errors import APIError
from bot.images import PreparedImage, prepare
from bot.jobs.handoff import ImageHandoff
from bot.media import ID_BYTES, MediaLinks, MediaSigner, MediaTooLarge, SignedMedia, add_media_routes
from bot.operations.retouch import RetouchRequest
from bot.operations.upscale import UpscaleRequest
from tests.fakes import samples

PUBLIC = "https://bot.example.org/"
SECRET = b"0123456789abcdef0123456789abcdef"
JPEG = b"\xff\xd8\xff\xe0" + b"jpeg-bytes" * 10


class Clock:
    """A settable wall clock."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def token_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def flipped(token: str, index: int, bit: int) -> str:
    """The token with one bit of one character changed (kept printable, so only the meaning changes)."""
    changed = chr(ord(token[index]) ^ (1 << bit))
    return token[:index] + changed + token[index + 1:]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def links(clock: Clock) -> MediaLinks:
    return MediaLinks(PUBLIC, secret=SECRET, ttl=600, clock=clock)


def test_a_link_serves_the_bytes_under_the_public_url(links):
    url = links.link(JPEG, "image/jpeg")
    assert url.startswith("https://bot.example.org/media/")
    assert url.endswith(".jpg")
    assert links.resolve(token_of(url)) == (JPEG, "image/jpeg")


def test_links_are_unguessable_and_never_repeat(links):
    urls = {links.link(JPEG, "image/jpeg") for _ in range(200)}
    assert len(urls) == 200
    expiry, media_id, signature, extension = token_of(next(iter(urls))).split(".")
    # 128 random bits in the id, a full SHA-256 in the signature
    assert len(base64.urlsafe_b64decode(media_id + "==")) * 8 == ID_BYTES * 8 == 128
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", signature)


def test_a_link_works_until_its_expiry_and_answers_nothing_after(links, clock):
    token = token_of(links.link(JPEG, "image/jpeg"))
    clock.now += 599
    assert links.resolve(token) is not None
    clock.now += 2
    assert links.resolve(token) is None
    clock.now -= 10  # a clock stepping back does not bring an expired link back: its bytes are gone
    assert links.resolve(token) is None
    assert links.stored_bytes == 0


def test_any_bit_flip_anywhere_in_the_token_is_refused(links):
    token = token_of(links.link(JPEG, "image/jpeg"))
    tried = 0
    for index in range(len(token)):
        for bit in range(6):
            forged = flipped(token, index, bit)
            tried += 1
            assert links.resolve(forged) is None, f"accepted a change at {index}, bit {bit}"
    assert tried == len(token) * 6
    assert links.resolve(token) == (JPEG, "image/jpeg")


def test_a_later_expiry_with_the_old_signature_is_refused(links, clock):
    token = token_of(links.link(JPEG, "image/jpeg"))
    expiry, rest = token.split(".", 1)
    clock.now += 10_000
    assert links.resolve(f"{int(expiry) + 100_000}.{rest}") is None


def test_changing_the_type_is_refused(links):
    token = token_of(links.link(b"\x89PNG\r\n\x1a\n-png", "image/png"))
    assert token.endswith(".png")
    assert links.resolve(token[:-3] + "jpg") is None


def test_unknown_and_malformed_tokens_are_refused(links):
    other = MediaLinks(PUBLIC, secret=SECRET, ttl=600, clock=links._clock)
    foreign = token_of(other.link(JPEG, "image/jpeg"))  # validly signed, but not stored here
    for token in (foreign, "", "x", "1.2.3", "1.2.3.jpg", "...", "1.a.b.c.jpg", "९९.a.b.jpg",
                  "9" * 40 + ".a.b.jpg", token_of(links.link(JPEG, "image/jpeg")) + "x"):
        assert links.resolve(token) is None, token


def test_a_different_secret_cannot_sign_links(clock):
    ours = MediaLinks(PUBLIC, secret=SECRET, clock=clock)
    token = token_of(ours.link(JPEG, "image/jpeg"))
    expiry, media_id, _, extension = token.split(".")
    forger = MediaSigner(b"another-secret-of-enough-bytes!!")
    forged = forger.sign(SignedMedia(media_id, int(expiry), "image/jpeg"))
    assert forged != token
    assert ours.resolve(forged) is None


def test_without_a_secret_each_store_makes_its_own(clock):
    first, second = MediaLinks(PUBLIC, clock=clock), MediaLinks(PUBLIC, clock=clock)
    token = token_of(first.link(JPEG, "image/jpeg"))
    expiry, media_id, _, _ = token.split(".")
    second._items[media_id] = first._items[media_id]  # even with the same bytes stored...
    assert second.resolve(token) is None  # ...the signature is not second's


def test_the_store_keeps_under_its_size_cap_dropping_the_oldest(clock):
    links = MediaLinks(PUBLIC, secret=SECRET, capacity_bytes=1000, clock=clock)
    first = token_of(links.link(b"a" * 400, "image/jpeg"))
    second = token_of(links.link(b"b" * 400, "image/jpeg"))
    third = token_of(links.link(b"c" * 400, "image/jpeg"))
    assert links.stored_bytes == 800
    assert links.resolve(first) is None
    assert links.resolve(second) is not None and links.resolve(third) is not None
    with pytest.raises(MediaTooLarge):
        links.link(b"d" * 1001, "image/jpeg")


def test_only_image_types_are_served(links):
    with pytest.raises(ValueError):
        links.link(b"<svg/>", "image/svg+xml")


def test_reprs_hold_no_secret(links):
    assert "0123456789abcdef" not in repr(links)
    assert "0123456789abcdef" not in repr(MediaSigner(SECRET))


async def test_the_server_answers_a_link_and_a_bare_404_for_anything_else(clock):
    links = MediaLinks("http://placeholder", secret=SECRET, ttl=60, clock=clock)
    app = web.Application()
    add_media_routes(app, links)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    root = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        path = urlsplit(links.link(JPEG, "image/jpeg")).path
        async with httpx.AsyncClient(base_url=root) as http:
            ok = await http.get(path)
            assert ok.status_code == 200
            assert ok.content == JPEG
            assert ok.headers["content-type"] == "image/jpeg"
            assert ok.headers["cache-control"] == "no-store"
            head = await http.head(path)
            assert head.status_code == 200
            refused = [await http.get(flipped(path, len(path) - 10, 1)), await http.get("/media/nothing"),
                       await http.post(path), await http.get("/"), await http.get(path + "/x")]
            assert [r.status_code for r in refused] == [404] * 5
            assert b"signature" not in b"".join(r.content for r in refused)
            clock.now += 61
            expired = await http.get(path)
            assert expired.status_code == 404
    finally:
        await runner.cleanup()


# --- the hand-off that uses the links ------------------------------------------------------------


class UploadService:
    """The service's upload endpoints over httpx.MockTransport: answering, or refusing with `status`."""

    def __init__(self, status: int = 200) -> None:
        self.status = status
        self.paths: list[str] = []
        self.requests: list[httpx.Request] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        self.requests.append(request)
        if self.status != 200:
            return httpx.Response(self.status, json={"code": str(self.status), "msg": "no such endpoint"})
        if request.url.path == "/v1/upload/sign":
            return httpx.Response(200, json={"code": "000", "msg": "ok", "data": {
                "upload_url": "https://storage.test/put/1", "url": "https://storage.test/img/1.jpg"}})
        return httpx.Response(200)


@pytest.fixture
def image() -> PreparedImage:
    return prepare(samples.jpeg(64, 48))


async def handoff_reference(service: UploadService, links: MediaLinks | None, mode: str, image: PreparedImage,
                            *, accepts_base64: bool) -> str:
    # an operation that takes BASE64 (upscale) or one that takes only URLs (retouch)
    request_type = UpscaleRequest if accepts_base64 else RetouchRequest
    async with httpx.AsyncClient(transport=httpx.MockTransport(service.handler)) as http:
        client = AiartClient(http, base_url="https://api.test", api_key="key-0123456789",
                             retry=RetryPolicy(attempts=1))
        return await ImageHandoff(client, links, mode=mode).reference(image, request_type)


async def test_auto_sends_base64_where_accepted_and_uploads_elsewhere(links, image):
    service = UploadService()
    assert await handoff_reference(service, links, "auto", image, accepts_base64=True) == image.base64()
    assert service.paths == []
    assert await handoff_reference(service, links, "auto", image, accepts_base64=False) == \
        "https://storage.test/img/1.jpg"
    assert links.stored_bytes == 0


async def test_a_refused_upload_falls_back_to_a_signed_link(links, image):
    service = UploadService(status=404)
    url = await handoff_reference(service, links, "auto", image, accepts_base64=False)
    assert service.paths == ["/v1/upload/sign"]
    assert url.startswith(PUBLIC + "media/")
    assert links.resolve(token_of(url)) == (image.data, "image/jpeg")


async def test_a_refused_upload_without_links_is_an_error(image):
    with pytest.raises(APIError):
        await handoff_reference(UploadService(status=404), None, "auto", image, accepts_base64=False)


async def test_upload_mode_uploads_even_where_base64_is_accepted(links, image):
    service = UploadService()
    url = await handoff_reference(service, links, "upload", image, accepts_base64=True)
    assert url == "https://storage.test/img/1.jpg"
    assert service.paths == ["/v1/upload/sign", "/put/1"]
    sign, put = service.requests
    # the upload kind the provider's client sends for an upscale, and the file's type on the PUT
    assert sign.url.params["type"] == "img_upscale"
    assert put.headers["Content-Type"] == "image/jpeg"


async def test_signed_url_mode_never_calls_the_service(links, image):
    service = UploadService()
    for accepts_base64 in (True, False):
        url = await handoff_reference(service, links, "signed_url", image, accepts_base64=accepts_base64)
        assert links.resolve(token_of(url)) is not None
    assert service.paths == []


async def test_signed_url_mode_needs_links():
    async with httpx.AsyncClient() as http:
        with pytest.raises(ValueError, match="PUBLIC_URL"):
            ImageHandoff(AiartClient(http, base_url="https://api.test", api_key="k"), None, mode="signed_url")
