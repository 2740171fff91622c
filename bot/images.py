"""Decode, validate, normalise and encode untrusted images with Pillow.

Every image a user sends is hostile until proven otherwise. The order of work is what keeps that
cheap and safe:

1. bytes: empty or over the size cap -> rejected without parsing anything;
2. magic bytes: a known but unwanted kind (HEIC, SVG, GIF, ...) -> rejected by name;
3. header: Pillow opens only the formats accepted on purpose and reads the header alone; animation,
   pixel count (decompression bombs), tiny sides and extreme aspect ratios are refused here, before
   a single pixel is decoded;
4. pixels: decoded (at a reduced JPEG scale when the result will be smaller anyway), turned upright
   from EXIF, converted to 8-bit RGB or RGBA, resized, and re-encoded without EXIF (the colour
   profile stays).

Any Pillow failure becomes `ImageRejected`, whose `text` tells the user what to send instead (a msgid
rendered later in the user's language; `reason` is its English). This module is a leaf: it imports
nothing from the rest of `bot` but `bot.i18n` (itself a leaf).
"""

from __future__ import annotations

import asyncio
import base64 as _base64
import collections
import ctypes
import ctypes.util
import io
import math
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from PIL import Image, ImageFile, ImageOps, UnidentifiedImageError

from bot.i18n import N_, Number, Text, lazy

__all__ = [
    "DEFAULT_LIMITS",
    "RETOUCH_LIMITS",
    "ImageInfo",
    "ImageLimits",
    "ImageRejected",
    "PreparationSlots",
    "PreparedImage",
    "inspect",
    "prepare",
    "sniff_mime",
    "to_base64",
]

_T = TypeVar("_T")
_JPEG_QUALITY = 90
_JPEG_QUALITY_STEPS = (80, 70)
# zlib level 1: on a 12-megapixel photo it is about 4x faster than the default 6 for ~15% more bytes.
_PNG_COMPRESS_LEVEL = 1
_MAX_SHRINK_STEPS = 8
# A reduced-scale JPEG decode may come out this much smaller than the target (then is resized up).
_DRAFT_SLACK = 0.95
# resize() first box-reduces by an integer factor while staying at least this many times larger than
# the target, then finishes with Lanczos: far faster for big reductions, and visually the same.
_RESIZE_REDUCING_GAP = 3.0

# What Pillow raises, directly or from a plugin, on malformed input. ImageRejected is a ValueError,
# so every handler of this tuple re-raises it first.
_PILLOW_ERRORS: tuple[type[BaseException], ...] = (
    OSError,
    SyntaxError,
    ValueError,
    struct.error,
    EOFError,
    IndexError,
    KeyError,
    TypeError,
    ZeroDivisionError,
    # Pillow warns about malformed files (and bombs); a warnings filter may turn those into errors.
    Warning,
)

_DISPLAY_NAMES = {"JPEG": "JPEG", "PNG": "PNG", "WEBP": "WebP"}
_PREFERRED_ORDER = ("JPEG", "PNG", "WEBP")

# MIME type -> Pillow format name, for the kinds Pillow could decode if a limit allowed them.
_MIME_TO_FORMAT = {
    "image/jpeg": "JPEG",
    "image/png": "PNG",
    "image/webp": "WEBP",
    "image/gif": "GIF",
    "image/bmp": "BMP",
    "image/tiff": "TIFF",
    "image/x-icon": "ICO",
}
_MIME_DESCRIPTIONS = {
    "image/jpeg": N_("JPEG images"),
    "image/png": N_("PNG images"),
    "image/webp": N_("WebP images"),
    "image/gif": N_("GIF images"),
    "image/bmp": N_("BMP images"),
    "image/tiff": N_("TIFF images"),
    "image/x-icon": N_("Icon files"),
    "image/heic": N_("HEIC photos"),
    "image/heif": N_("HEIF photos"),
    "image/avif": N_("AVIF images"),
    "image/jxl": N_("JPEG XL images"),
    "image/svg+xml": N_("SVG drawings"),
}
_OTHER_KIND = N_("Images of this kind")
# iPhone photos are HEIC as files, but Telegram converts them to JPEG when sent as a photo.
_SEND_AS_PHOTO_HINT = {"image/heic", "image/heif", "image/avif"}

_HEIF_BRANDS = {b"heic", b"heix", b"hevc", b"hevx", b"heim", b"heis", b"hevm", b"hevs"}
_HEIF_GENERIC_BRANDS = {b"mif1", b"msf1", b"mif2"}
_AVIF_BRANDS = {b"avif", b"avis"}


class ImageRejected(ValueError):
    """An input image we will not process; `text` is a short user-facing sentence saying what to send instead.

    The checks do not know the user's language: `text` is rendered where it is shown; `reason` is its English.
    """

    reason: str
    text: Text

    def __init__(self, reason: str | Text) -> None:
        self.text = reason if isinstance(reason, Text) else lazy(reason)
        self.reason = str(self.text)
        super().__init__(self.reason)


@dataclass(frozen=True)
class ImageLimits:
    """What an operation accepts as input and how its normalised output must look."""

    formats: frozenset[str] = frozenset({"JPEG", "PNG", "WEBP"})
    max_bytes: int = 20 * 1024 * 1024
    max_pixels: int = 40_000_000
    min_side: int = 16
    max_aspect: float = 20.0
    max_side: int | None = None
    output_max_bytes: int | None = None
    keep_alpha: bool = False


RETOUCH_LIMITS = ImageLimits(
    formats=frozenset({"JPEG", "PNG"}),
    min_side=129,
    max_side=5000,
    output_max_bytes=6 * 1024 * 1024,
)
DEFAULT_LIMITS = ImageLimits()


@dataclass(frozen=True)
class ImageInfo:
    """What the header says about an accepted image; MPO photos count as one-frame JPEGs."""

    format: str
    width: int
    height: int
    mode: str
    frames: int


@dataclass(frozen=True)
class PreparedImage:
    """A normalised, upright, metadata-free image ready to hand to the service."""

    data: bytes
    mime: str
    width: int
    height: int
    format: str

    @property
    def suffix(self) -> str:
        """File name extension without the dot: "jpg" or "png"."""
        return "jpg" if self.format == "JPEG" else "png"

    def base64(self) -> str:
        """The encoded image as plain BASE64 (no data: prefix)."""
        return to_base64(self.data)


def to_base64(data: bytes) -> str:
    """Plain BASE64 of `data`, as ASCII text."""
    return _base64.b64encode(data).decode("ascii")


def sniff_mime(data: bytes) -> str | None:
    """The image MIME type given by the magic bytes of `data`, or None if unknown."""
    head = data[:64]
    if head[4:8] == b"ftyp":
        return _sniff_iso_bmff(data)
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "image/tiff"
    if head[:2] == b"BM" and len(head) >= 26:
        return "image/bmp"
    if head[:4] == b"\x00\x00\x01\x00":
        return "image/x-icon"
    if head.startswith((b"\xff\x0a", b"\x00\x00\x00\x0cJXL \r\n\x87\n")):
        return "image/jxl"
    if _looks_like_svg(data):
        return "image/svg+xml"
    return None


def inspect(data: bytes, limits: ImageLimits = DEFAULT_LIMITS) -> ImageInfo:
    """Check `data` against `limits` from its bytes and header only, without decoding pixels."""
    image, info = _open_checked(data, limits)
    image.close()
    return info


def prepare(data: bytes, limits: ImageLimits = DEFAULT_LIMITS) -> PreparedImage:
    """Validate, decode, turn upright, convert, resize and re-encode `data` to satisfy `limits`."""
    image, _ = _open_checked(data, limits)
    with image:
        try:
            return _normalise(image, limits)
        except ImageRejected:
            raise
        except _PILLOW_ERRORS as exc:
            raise ImageRejected(_damaged_reason(limits)) from exc


class PreparationSlots:
    """Runs `prepare` in worker threads, at most `concurrency` at once and their pixels within a budget.

    Preparing a 40-megapixel image takes about 250 MB and over a second of CPU, and a PNG that small
    on the wire can decode to that much: without a bound, a few users sending such files at once
    would take the process's memory. Each preparation reserves its pixel count (read from the
    header first, which also refuses bad input before it waits); one larger than the whole budget
    runs alone. Waiters are served in order, so a large image is not passed over forever. A slot is
    given back only when its thread has finished, even if the caller was cancelled meanwhile.

    After each preparation the C allocator is asked to give freed memory back (glibc's malloc_trim):
    it keeps an arena per thread, and an arena that once held a decoded image keeps most of it, so
    without that, twenty 40 MP inputs prepared one at a time still peaked at 420 MB (260 MB with it;
    see bench/perf/prep.py, run_prep_flood).
    """

    def __init__(self, concurrency: int = 2, max_pixels: int = 50_000_000) -> None:
        if concurrency < 1 or max_pixels < 1:
            raise ValueError("preparation needs at least one slot and one pixel")
        self._concurrency = concurrency
        self._max_pixels = max_pixels
        self._running = 0
        self._pixels = 0
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    @property
    def running(self) -> int:
        """Preparations holding a slot now."""
        return self._running

    async def prepare(self, data: bytes, limits: ImageLimits = DEFAULT_LIMITS) -> PreparedImage:
        """`prepare(data, limits)` in a thread, once a slot and the pixels are free."""
        return await self.run(data, limits, lambda checked: prepare(checked, limits))

    async def run(self, data: bytes, limits: ImageLimits, decode: Callable[[bytes], _T]) -> _T:
        """`decode(data)` in a thread, once a slot and the pixels are free; the header is checked against
        `limits` first, on the caller's side, so a refusal waits for nothing."""
        info = inspect(data, limits)
        cost = min(info.width * info.height, self._max_pixels)
        await self._acquire(cost)
        # only a large decode leaves enough behind in an arena to be worth a trim (which costs milliseconds)
        trim = info.width * info.height >= TRIM_FROM_PIXELS
        work = asyncio.ensure_future(asyncio.to_thread(_run_and_trim, decode, data, trim))
        work.add_done_callback(lambda done: self._finished(done, cost))
        # shielded: a cancelled caller stops waiting, but the slot stays taken until the thread is done
        return await asyncio.shield(work)

    def _finished(self, work: asyncio.Future[Any], cost: int) -> None:
        if not work.cancelled():
            work.exception()  # the caller may be gone; its error must not be logged as never retrieved
        self._release(cost)

    def _fits(self, cost: int) -> bool:
        return self._running < self._concurrency and self._pixels + cost <= self._max_pixels

    async def _acquire(self, cost: int) -> None:
        if not self._waiting and self._fits(cost):
            self._take(cost)
            return
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (cost, granted)
        self._waiting.append(entry)
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self._release(cost)  # granted just as the caller was cancelled: give it to the next
            else:
                self._waiting.remove(entry)
                self._grant()
            raise

    def _take(self, cost: int) -> None:
        self._running += 1
        self._pixels += cost

    def _release(self, cost: int) -> None:
        self._running -= 1
        self._pixels -= cost
        self._grant()

    def _grant(self) -> None:
        while self._waiting and self._fits(self._waiting[0][0]):
            cost, granted = self._waiting.popleft()
            self._take(cost)
            granted.set_result(None)


def _run_and_trim(decode: Callable[[bytes], _T], data: bytes, trim: bool) -> _T:
    try:
        return decode(data)
    finally:
        if trim:
            _release_freed_memory()


def _load_malloc_trim() -> Callable[[int], int] | None:
    """glibc's malloc_trim, or None where the C library has none (musl, macOS)."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


_MALLOC_TRIM = _load_malloc_trim()
#: inputs of at least this many pixels are followed by a trim; smaller ones leave too little to matter
TRIM_FROM_PIXELS = 4_000_000


def _release_freed_memory() -> None:
    # a few milliseconds after a preparation of a second or so; it gives back the decoded pixels
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


def _open_checked(data: bytes, limits: ImageLimits) -> tuple[ImageFile.ImageFile, ImageInfo]:
    accepted = _accepted_phrase(limits)
    if not data:
        raise ImageRejected(lazy("The file is empty. Send a {accepted} photo.", accepted=accepted))
    if len(data) > limits.max_bytes:
        raise ImageRejected(lazy("This file is too large ({size}). Send an image under {most}.",
                                 size=_megabytes(len(data)), most=_megabytes(limits.max_bytes)))
    mime = sniff_mime(data)
    if mime is not None and _MIME_TO_FORMAT.get(mime) not in limits.formats:
        raise ImageRejected(_unsupported_reason(mime, accepted))

    image = _open_header(data, mime, limits)
    try:
        info = _header_info(image, accepted, limits)
        _check_geometry(info, limits)
    except ImageRejected:
        image.close()
        raise
    except _PILLOW_ERRORS as exc:
        image.close()
        raise ImageRejected(_damaged_reason(limits)) from exc
    return image, info


def _open_header(data: bytes, mime: str | None, limits: ImageLimits) -> ImageFile.ImageFile:
    try:
        # Pillow's own bomb check raises only past twice its global cap, which may be changed or
        # disabled elsewhere; ours runs on the header right after this and never depends on it.
        return Image.open(io.BytesIO(data), formats=sorted(limits.formats))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejected(_too_many_pixels_reason(limits)) from exc
    except UnidentifiedImageError as exc:
        if mime is None:
            raise ImageRejected(lazy("This file is not an image I can read. Send a {accepted} photo.",
                                     accepted=_accepted_phrase(limits))) from exc
        raise ImageRejected(_damaged_reason(limits)) from exc
    except _PILLOW_ERRORS as exc:
        raise ImageRejected(_damaged_reason(limits)) from exc


def _header_info(image: ImageFile.ImageFile, accepted: str | Text, limits: ImageLimits) -> ImageInfo:
    # An MPO is a JPEG with extra views (stereo, depth) appended; phones write them. Only the first
    # view is ever decoded, so it is a one-frame JPEG for our purposes.
    is_mpo = image.format == "MPO"
    fmt = "JPEG" if is_mpo else (image.format or "")
    if fmt not in limits.formats:
        raise ImageRejected(lazy("This kind of image is not supported here. Send a {accepted} photo.",
                                 accepted=accepted))
    frames = 1 if is_mpo else int(getattr(image, "n_frames", 1))
    if frames > 1:
        raise ImageRejected(lazy("Animated images are not supported. Send a still image ({accepted}).",
                                 accepted=accepted))
    width, height = image.size
    return ImageInfo(format=fmt, width=width, height=height, mode=image.mode, frames=frames)


def _check_geometry(info: ImageInfo, limits: ImageLimits) -> None:
    width, height = info.width, info.height
    dimensions = lazy("{width}×{height} pixels", width=width, height=height)
    if width * height > limits.max_pixels:
        raise ImageRejected(lazy("This image is too large ({dimensions}). Send an image of at most {most} megapixels.",
                                 dimensions=dimensions, most=Number(limits.max_pixels / 1_000_000)))
    # Aspect before size: for a thin strip, "too narrow" is the more useful of the two answers.
    if min(width, height) > 0 and max(width, height) / min(width, height) > limits.max_aspect:
        raise ImageRejected(lazy(
            "This image is too long and narrow ({dimensions}). "
            "Send an image whose long side is at most {most} times its short side.",
            dimensions=dimensions, most=Number(limits.max_aspect)))
    if min(width, height) < max(1, limits.min_side):
        raise ImageRejected(lazy("This image is too small ({dimensions}). Send an image at least {least} pixels on each side.",
                                 dimensions=dimensions, least=limits.min_side))


def _normalise(image: ImageFile.ImageFile, limits: ImageLimits) -> PreparedImage:
    target = fitted_size(image.size, limits.max_side)
    if target != image.size and image.format in ("JPEG", "MPO"):
        # libjpeg decodes at 1/2, 1/4 or 1/8 scale, never below the size asked for. Asking for a
        # little less than the target lets a 4032x3024 phone photo bound for 2048 px decode at half
        # scale (2016 px, a third of the time) at the cost of a barely visible 1.6% upscale.
        image.draft("RGB", (_draft_side(target[0]), _draft_side(target[1])))
    image.load()
    icc_profile = image.info.get("icc_profile") if image.mode in ("RGB", "RGBA") else None
    stored_size = image.size
    _make_upright(image)
    if image.size != stored_size:
        target = (target[1], target[0])

    pixels = _to_8bit_colour(image, keep_alpha=limits.keep_alpha)
    if pixels.size != target:
        pixels = pixels.resize(target, Image.Resampling.LANCZOS, reducing_gap=_RESIZE_REDUCING_GAP)

    fmt = "PNG" if limits.keep_alpha else "JPEG"
    data, pixels = _encode_within(pixels, fmt, icc_profile, limits)
    mime = "image/png" if fmt == "PNG" else "image/jpeg"
    return PreparedImage(data=data, mime=mime, width=pixels.width, height=pixels.height, format=fmt)


def fitted_size(size: tuple[int, int], max_side: int | None) -> tuple[int, int]:
    """`size` scaled down so its longest side is at most `max_side`: what the service gets of an input."""
    width, height = size
    longest = max(width, height)
    if max_side is None or longest <= max_side:
        return size
    scale = max_side / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


def _draft_side(side: int) -> int:
    return max(1, math.ceil(side * _DRAFT_SLACK))


def _make_upright(image: Image.Image) -> None:
    try:
        ImageOps.exif_transpose(image, in_place=True)
    except _PILLOW_ERRORS:
        # A malformed EXIF block should not cost the user a photo whose pixels decoded fine.
        return


def _to_8bit_colour(image: Image.Image, *, keep_alpha: bool) -> Image.Image:
    """RGB, or RGBA when `keep_alpha` and the image has transparency; may return `image` itself."""
    if image.mode.startswith("I") or image.mode == "F":
        image = _high_depth_to_grey(image)
    has_alpha = image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info
    if not has_alpha:
        return image if image.mode == "RGB" else image.convert("RGB")
    rgba = image if image.mode == "RGBA" else image.convert("RGBA")
    if keep_alpha:
        return rgba
    flattened = Image.new("RGB", rgba.size, (255, 255, 255))
    flattened.paste(rgba, mask=rgba.getchannel("A"))
    return flattened


def _high_depth_to_grey(image: Image.Image) -> Image.Image:
    # Pillow's own I -> L conversion clips at 255, which turns 16-bit greys white; scale instead.
    grey = image.convert("I").point(lambda value: value * (1 / 257)).convert("L")
    grey.info.pop("transparency", None)
    return grey


def _encode_within(
    image: Image.Image, fmt: str, icc_profile: bytes | None, limits: ImageLimits
) -> tuple[bytes, Image.Image]:
    """Encode, then lower JPEG quality and downscale until the output size cap holds."""
    quality = _JPEG_QUALITY
    data = _encode(image, fmt, quality, icc_profile)
    cap = limits.output_max_bytes
    if cap is None:
        return data, image
    quality_steps = list(_JPEG_QUALITY_STEPS) if fmt == "JPEG" else []
    for _ in range(_MAX_SHRINK_STEPS):
        if len(data) <= cap:
            return data, image
        # Lower quality only helps a little; when far over the cap, go straight to downscaling.
        if quality_steps and len(data) <= 2 * cap:
            quality = quality_steps.pop(0)
        else:
            ratio = math.sqrt(cap / len(data)) * 0.9
            size = (max(1, int(image.width * ratio)), max(1, int(image.height * ratio)))
            if min(size) < max(1, limits.min_side):
                break
            image = image.resize(size, Image.Resampling.LANCZOS, reducing_gap=_RESIZE_REDUCING_GAP)
        data = _encode(image, fmt, quality, icc_profile)
    if len(data) <= cap:
        return data, image
    raise ImageRejected(lazy("I could not make this image small enough to process. Send a smaller photo."))


def _encode(image: Image.Image, fmt: str, quality: int, icc_profile: bytes | None) -> bytes:
    # No exif= is passed, so location and camera metadata never leave the bot; the ICC profile
    # stays because wide-gamut phone photos look wrong without it.
    params: dict[str, object] = {}
    if icc_profile:
        params["icc_profile"] = icc_profile
    if fmt == "JPEG":
        params["quality"] = quality
    else:
        params["compress_level"] = _PNG_COMPRESS_LEVEL
    buffer = io.BytesIO()
    image.save(buffer, fmt, **params)
    return buffer.getvalue()


def _sniff_iso_bmff(data: bytes) -> str | None:
    box_size = int.from_bytes(data[:4], "big")
    end = min(len(data), box_size if 16 <= box_size <= 4096 else 64)
    major = data[8:12]
    brands = {major} | {data[i : i + 4] for i in range(16, end - 3, 4)}
    if brands & _AVIF_BRANDS and major not in _HEIF_BRANDS:
        return "image/avif"
    if major in _HEIF_BRANDS or brands & _HEIF_BRANDS:
        return "image/heic"
    if brands & _HEIF_GENERIC_BRANDS:
        return "image/heif"
    return None


def _looks_like_svg(data: bytes) -> bool:
    head = data[:1024].lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if not head.startswith((b"<?xml", b"<svg", b"<!doctype svg", b"<!--")):
        return False
    return b"<svg" in head


def _accepted_phrase(limits: ImageLimits) -> str | Text:
    ordered = [f for f in _PREFERRED_ORDER if f in limits.formats]
    ordered += sorted(f for f in limits.formats if f not in _PREFERRED_ORDER)
    names = [_DISPLAY_NAMES.get(f, f) for f in ordered]
    if len(names) <= 1:
        return "".join(names) or "JPEG"
    return lazy("{names} or {last}", names=", ".join(names[:-1]), last=names[-1])


def _unsupported_reason(mime: str, accepted: str | Text) -> Text:
    kind = lazy(_MIME_DESCRIPTIONS.get(mime, _OTHER_KIND))
    if mime in _SEND_AS_PHOTO_HINT:
        return lazy("{kind} are not supported here. Send it as a photo rather than a file, or send a {accepted}.",
                    kind=kind, accepted=accepted)
    return lazy("{kind} are not supported here. Send a {accepted} photo.", kind=kind, accepted=accepted)


def _damaged_reason(limits: ImageLimits) -> Text:
    return lazy("The file is damaged or incomplete. Send the photo again, as a {accepted}.",
                accepted=_accepted_phrase(limits))


def _too_many_pixels_reason(limits: ImageLimits) -> Text:
    return lazy("This image is too large. Send an image of at most {most} megapixels.",
                most=Number(limits.max_pixels / 1_000_000))


def _megabytes(size: int) -> Text:
    # Rounded up, so a file just over a 20 MB limit reads "20.1 MB", not "20 MB"; "20,1" where the reader's
    # language writes a decimal comma
    tenths = math.ceil(size * 10 / (1024 * 1024))
    return lazy("{size} MB", size=Number(tenths / 10))


_SUFFIX_FORMATS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".webp": "WEBP"}


def reencode(data: bytes, suffix: str) -> bytes:
    """The image in the format its file suffix names (unchanged when it already is, or the suffix is unknown)."""
    target = _SUFFIX_FORMATS.get(suffix.lower())
    if target is None or _MIME_TO_FORMAT.get(sniff_mime(data) or "") == target:
        return data
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        converted = image if target != "JPEG" or image.mode == "RGB" else image.convert("RGB")
        out = io.BytesIO()
        converted.save(out, format=target)
    return out.getvalue()
