"""The bot's own short-lived media links: HMAC-signed, unguessable, expiring, served from memory.

When the service needs an image by URL and its upload endpoint is unavailable, the bot serves the
bytes itself at `{PUBLIC_URL}/media/<token>`. A token is `<expiry>.<id>.<signature>.<ext>`:

    expiry     unix seconds after which the link answers 404
    id         128 random bits (URL-safe BASE64), so links cannot be guessed or enumerated
    signature  HMAC-SHA256 over (id, expiry, MIME type) with a per-process secret (or MEDIA_SECRET)
    ext        the file extension the MIME type maps to (some services judge an image by its URL)

Every failure (unknown id, expired, any changed character, wrong method) is the same bare 404, so
the server tells a prober nothing. The bytes live in memory for the link's lifetime, under a total
size cap; the oldest links give way first when the cap is reached.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

DEFAULT_TTL_S = 600.0
DEFAULT_CAPACITY_BYTES = 256 * 1024 * 1024
ID_BYTES = 16  # 128 bits
MEDIA_PATH = "/media/"

EXTENSIONS = {"image/jpeg": "jpg", "image/png": "png", "image/webp": "webp"}
MIME_TYPES = {extension: mime for mime, extension in EXTENSIONS.items()}
_MAX_EXPIRY_DIGITS = 12


class MediaTooLarge(ValueError):
    """One image is larger than the whole in-memory media store."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


@dataclass(frozen=True)
class SignedMedia:
    """What a valid token names: a stored image's id, its expiry and its MIME type."""

    media_id: str
    expires: int
    mime: str


class MediaSigner:
    """Makes and checks media tokens; knows nothing of time or storage."""

    def __init__(self, secret: bytes) -> None:
        if len(secret) < 16:
            raise ValueError("the media secret must be at least 16 bytes")
        self._secret = secret

    def __repr__(self) -> str:
        return f"{type(self).__name__}(secret=***)"

    def _signature(self, media_id: str, expires: int, mime: str) -> str:
        message = f"{media_id}\n{expires}\n{mime}".encode()
        return _b64(hmac.new(self._secret, message, hashlib.sha256).digest())

    def sign(self, media: SignedMedia) -> str:
        """The token for `media`."""
        extension = EXTENSIONS.get(media.mime)
        if extension is None:
            raise ValueError(f"cannot serve media of type {media.mime!r}")
        signature = self._signature(media.media_id, media.expires, media.mime)
        return f"{media.expires}.{media.media_id}.{signature}.{extension}"

    def verify(self, token: str) -> SignedMedia | None:
        """What an untampered token names (expired or not); None for anything else."""
        parts = token.split(".")
        if len(parts) != 4:
            return None
        expiry, media_id, signature, extension = parts
        mime = MIME_TYPES.get(extension)
        if mime is None or not expiry.isascii() or not expiry.isdigit() or len(expiry) > _MAX_EXPIRY_DIGITS:
            return None
        if not media_id.isascii() or not signature.isascii():
            return None
        expected = self._signature(media_id, int(expiry), mime)
        if not hmac.compare_digest(expected.encode("ascii"), signature.encode("ascii")):
            return None
        return SignedMedia(media_id, int(expiry), mime)


@dataclass(frozen=True)
class _Stored:
    data: bytes
    mime: str
    expires: int


class MediaLinks:
    """Holds images for a while and hands out signed links to them (implements the handoff's MediaLinks)."""

    def __init__(self, public_url: str, *, secret: bytes | None = None, ttl: float = DEFAULT_TTL_S,
                 capacity_bytes: int = DEFAULT_CAPACITY_BYTES, clock: Callable[[], float] = time.time) -> None:
        if ttl <= 0 or capacity_bytes <= 0:
            raise ValueError("ttl and capacity_bytes must be positive")
        self._base = public_url.rstrip("/") + MEDIA_PATH
        self._signer = MediaSigner(secret or secrets.token_bytes(32))
        self._ttl = ttl
        self._capacity = capacity_bytes
        self._clock = clock
        self._items: OrderedDict[str, _Stored] = OrderedDict()
        self._size = 0

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base={self._base!r}, links={len(self._items)}, bytes={self._size})"

    @property
    def stored_bytes(self) -> int:
        """Bytes held for links that have not been dropped yet."""
        return self._size

    def link(self, data: bytes, mime: str) -> str:
        """A URL that serves `data` as `mime` until the link expires."""
        if mime not in EXTENSIONS:
            raise ValueError(f"cannot serve media of type {mime!r}")
        if len(data) > self._capacity:
            raise MediaTooLarge(f"image of {len(data)} bytes is larger than the media store")
        now = self._clock()
        self._drop_expired(now)
        while self._size + len(data) > self._capacity:
            self._drop(next(iter(self._items)))
        media_id = _b64(secrets.token_bytes(ID_BYTES))
        # rounded up, so a link never expires before its full ttl
        expires = int(now + self._ttl) + 1
        self._items[media_id] = _Stored(data, mime, expires)
        self._size += len(data)
        return self._base + self._signer.sign(SignedMedia(media_id, expires, mime))

    def resolve(self, token: str) -> tuple[bytes, str] | None:
        """The bytes and MIME type a token serves now; None when unknown, expired or tampered with."""
        media = self._signer.verify(token)
        now = self._clock()
        self._drop_expired(now)
        if media is None or now >= media.expires:
            return None
        stored = self._items.get(media.media_id)
        if stored is None or stored.mime != media.mime or stored.expires != media.expires:
            return None
        return stored.data, stored.mime

    def _drop_expired(self, now: float) -> None:
        expired = [media_id for media_id, stored in self._items.items() if now >= stored.expires]
        for media_id in expired:
            self._drop(media_id)

    def _drop(self, media_id: str) -> None:
        stored = self._items.pop(media_id)
        self._size -= len(stored.data)


def add_media_routes(app: web.Application, links: MediaLinks) -> None:
    """Serve GET (and HEAD) /media/<token> from `links` in `app`; any other method or token is a bare 404."""

    async def serve(request: web.Request) -> web.Response:
        found = links.resolve(request.match_info["token"]) if request.method in ("GET", "HEAD") else None
        if found is None:
            raise web.HTTPNotFound()
        data, mime = found
        return web.Response(body=data, content_type=mime,
                            headers={"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"})

    # every method is routed here, so even a wrong one gets the same bare 404 (not a telling 405)
    app.router.add_route("*", MEDIA_PATH + "{token}", serve)
