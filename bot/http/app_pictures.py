"""What the Mini App's page needs beyond the core API: pictures sized for a phone, its screens' prices, and the
person's jobs still in progress.

    GET picture?ref=…&size=thumb|display   a photo or result scaled down for a tile or for the screen
                                           (a video's thumbnail: the bot never decodes a video)
    GET screens                            Paint's and Frame's price (rendered) and the side the service gets, and
                                           the styled operations' prices ("headshot 2": two headshots)
    GET pending                            the person's jobs in their chat with the bot that are not done yet

A 2560 px photo is a megabyte; a 112 px tile needs a twentieth of that. Copies are made here once per file
and size and kept in a small memory cache: a Telegram file id names immutable bytes, so its copy's ETag is
derived from the id and a page that has it gets 304 without the bot downloading anything.
"""

from __future__ import annotations

import hashlib
import io
from collections import OrderedDict
from dataclasses import dataclass, field

from aiohttp import web
from PIL import Image, ImageOps, WebPImagePlugin

from bot.http import app_texts
from bot.http.app_api import _INSPECT, API_PATH, ApiError, AppApi, Caller, MiniApp, _authenticated
from bot.http.app_sizes import SIDES
from bot.i18n import tr
from bot.images import ImageRejected, _damaged_reason, inspect
from bot.jobs.service import JobRequest
from bot.operations.catalogue import ArgumentError, Operation, ResultKind
from bot.store import ACTIVE_STATES

#: the copies' format, its encoder registered at import: otherwise the first copy's save() makes Pillow import every
#: format it knows (Image.init, about 0.3 s on a busy machine), and that first copy is a person's first look at Paint
WEBP = WebPImagePlugin.WebPImageFile.format

QUALITY = {"thumb": 72, "display": 80}
#: copies kept in memory, by total size
CACHE_BYTES = 24 * 1024 * 1024
#: what one cached copy costs beyond its bytes (its key, validator and the dictionary's entry), counted so that
#: many tiny copies (a 1 px picture's is 40 bytes) cannot hold far more memory than CACHE_BYTES
ENTRY_OVERHEAD = 1024
#: an argument each screen's operation accepts, to price it before the person has chosen one
_SAMPLE = {"paint": "a", "frame": "1 1 1 1"}
PENDING_SHOWN = 10
#: a copy of a picture larger than a phone's photo costs one more plain read of the request budget for each
#: this many pixels (a 40-megapixel document's copy costs 6, near a paint request's 10): decoding it takes a
#: second of CPU and the worker's image-preparation budget, so one person cannot keep both busy at the refill rate
PIXELS_PER_READ = 8_000_000
# what Pillow raises on a damaged or truncated file
_DECODE_ERRORS = (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError)


@dataclass(frozen=True)
class Copy:
    """A scaled copy: its bytes, type, validator, and the original's size."""

    data: bytes
    mime: str
    etag: str
    original: tuple[int, int]


@dataclass
class CopyCache:
    """The most recently used copies, at most `limit` bytes of them."""

    limit: int = CACHE_BYTES
    _items: OrderedDict[tuple[str, str], Copy] = field(default_factory=OrderedDict)
    _bytes: int = 0

    def get(self, key: tuple[str, str]) -> Copy | None:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: tuple[str, str], copy: Copy) -> None:
        if key in self._items:
            return
        self._items[key] = copy
        self._bytes += len(copy.data) + ENTRY_OVERHEAD
        while self._bytes > self.limit and len(self._items) > 1:
            _, dropped = self._items.popitem(last=False)
            self._bytes -= len(dropped.data) + ENTRY_OVERHEAD


def etag_of(file_id: str, size: str) -> str:
    """The copy's validator: the same file id and size always make the same copy."""
    return '"' + hashlib.sha256(f"{file_id}/{size}".encode()).hexdigest()[:24] + '"'


def scaled_copy(data: bytes, size: str, etag: str) -> Copy:
    """A copy of an image no longer than SIDES[size], upright; WebP (with its transparency, if any).

    Runs in a thread under the preparation budget, after its header was checked (PageExtras.picture)."""
    try:
        return _scaled(data, size, etag)
    except _DECODE_ERRORS as error:
        raise ImageRejected(_damaged_reason(_INSPECT)) from error


def _scaled(data: bytes, size: str, etag: str) -> Copy:
    with Image.open(io.BytesIO(data)) as image:
        stored = image.size
        # a JPEG decodes at 1/2, 1/4 or 1/8 scale when asked, down to no less than the size asked for: asked for
        # the copy's own size (not the square around it), a 2560×1920 photo bound for 1080 px decodes at 1280×960
        # instead of in full, and for 320 px at 320×240
        side = SIDES[size]
        ratio = min(1.0, side / max(stored))
        image.draft("RGB", (max(1, round(stored[0] * ratio)), max(1, round(stored[1] * ratio))))
        scale = stored[0] / image.size[0]
        image = ImageOps.exif_transpose(image)
        original = (round(image.size[0] * scale), round(image.size[1] * scale))
        image.thumbnail((SIDES[size], SIDES[size]), Image.Resampling.LANCZOS)
        keep_alpha = image.mode in ("RGBA", "LA", "P") and "A" in image.convert("RGBA").getbands()
        out = io.BytesIO()
        image.convert("RGBA" if keep_alpha else "RGB").save(out, WEBP, quality=QUALITY[size], method=1)  # fast: made while a person waits
    return Copy(out.getvalue(), "image/webp", etag, original)


class PageExtras:
    """The handlers, bound to one MiniApp and sharing the core API's checks of references."""

    def __init__(self, app: MiniApp, cache: CopyCache | None = None) -> None:
        self.app, self.core, self.cache = app, AppApi(app), cache or CopyCache()

    async def picture(self, request: web.Request, caller: Caller) -> web.StreamResponse:
        size = request.query.get("size", "display")
        if size not in SIDES:
            raise web.HTTPBadRequest()
        file_id = await self._drawn(caller, request.query.get("ref"))
        etag = etag_of(file_id, size)
        found = self.cache.get((file_id, size))
        headers = {"Cache-Control": "private, max-age=86400", "ETag": etag, "Vary": "Authorization"}
        if etag in request.headers.get("If-None-Match", "") and found is not None:
            return web.Response(status=304, headers=headers)
        if found is None:
            # a download holds megabytes and a document may decode to far more than it weighs: a large
            # request's slot, the header checked (pixels capped), the decode in a thread under the worker's budget
            async with self.app.large.slot(caller.user_id):
                data = await self.core._download(file_id)
                try:
                    info = inspect(data, _INSPECT)
                    extra = info.width * info.height // PIXELS_PER_READ
                    if extra and not self.app.budget.take(caller.user_id, extra):
                        raise ApiError(429, "rate_limited", app_texts.RATE_LIMITED)
                    found = await self.app.preparation.run(
                        data, _INSPECT, lambda checked: scaled_copy(checked, size, etag))
                except ImageRejected as error:
                    raise ApiError(400, "bad_image", error.text) from error
            self.cache.put((file_id, size), found)
        headers["X-Image-Size"] = f"{found.original[0]}x{found.original[1]}"
        return web.Response(body=found.data, content_type=found.mime, headers=headers)

    async def _drawn(self, caller: Caller, ref: object) -> str:
        """The file whose picture stands for a reference: a video's thumbnail (its poster), never the video, which
        may be larger than the bot can download and is no picture; 404 for a video without one."""
        entry = await self.core._entry(caller, ref)
        if entry.get("kind") != ResultKind.VIDEO:
            return entry["id"]
        if "thumb" not in entry:
            raise ApiError(404, "no_poster", app_texts.NOT_YOURS)
        return entry["thumb"]

    async def screens(self, request: web.Request, caller: Caller) -> web.Response:
        answer = {}
        for operation in self.app.operations.values():
            if operation.mini_app is not None:
                answer[operation.mini_app] = {"price": self._price(caller, operation, _SAMPLE[operation.mini_app]),
                                              "max_side": operation.limits.max_side}
        return web.json_response({"screens": answer, "prices": self._style_prices(caller)},
                                 headers={"Cache-Control": "no-store"})

    def _style_prices(self, caller: Caller) -> dict[str, str | None]:
        """What a tap on a style tile (or a one-tap follow-up) costs: by operation, or "operation count"."""
        prices: dict[str, str | None] = {}
        for operation in self.app.operations.values():
            if operation.style_group is None or operation.style_group not in self.app.styles.groups:
                if operation.images == 1 and operation.menu_buttons:
                    prices[operation.name] = self._price(caller, operation, operation.menu_buttons[0].argument)
                continue
            first = next(iter(self.app.styles.group(operation.style_group).styles))
            if operation.pick is not None:
                for _, argument in operation.pick.offer(first):
                    prices[f"{operation.name} {argument.split()[-1]}"] = self._price(caller, operation, argument)
            else:
                prices[operation.name] = self._price(caller, operation, f"{first} a")
        return prices

    def _price(self, caller: Caller, operation: Operation, sample: str) -> str | None:
        """The price of `operation` with the arguments `sample`, as a person reads it ("1 credit"); None: free."""
        try:
            args = operation.parse(sample)
        except ArgumentError:
            return None
        request = JobRequest(chat_id=caller.user_id, chat_type="private", chat_title=None, user_id=caller.user_id,
                             username=None, first_name=None, reply_to_message_id=None, operation=operation.name,
                             args=args, inputs=[], language=caller.language)
        price = self.app.jobs.price(request)
        return app_texts.credits_line(caller.language, price) if price else None

    async def pending(self, request: web.Request, caller: Caller) -> web.Response:
        jobs = await self.app.people.recent(caller.user_id, caller.user_id, limit=PENDING_SHOWN)
        items = []
        for job in jobs:
            if job.state not in ACTIVE_STATES:
                continue
            operation = self.app.operations.get(job.operation)
            title = tr(caller.language, operation.title) if operation is not None else job.operation
            items.append({"job": job.id, "title": title, "created": job.created_at.isoformat()})
        return web.json_response({"pending": items}, headers={"Cache-Control": "no-store"})


def add_extra_routes(web_app: web.Application, app: MiniApp) -> None:
    """The routes of this module under /app/api/, behind the same authentication as the core API."""
    extras = PageExtras(app)
    for path, handle in (("picture", extras.picture), ("screens", extras.screens), ("pending", extras.pending)):
        web_app.router.add_get(API_PATH + path, _authenticated(app, handle))
