"""Sample image files, friendly and hostile, generated in memory for tests.

Every function returns the bytes of one file. Large images are made cheaply (a flat colour plus a
few small noisy patches) so that suites stay fast; the decompression bomb is cached because its
deflate stream takes a fraction of a second to build.
"""

from __future__ import annotations

import functools
import io
import struct
import zlib

from PIL import Image

_PATCH_SIDE = 64
_RED = (220, 30, 30)
_BLUE = (30, 30, 220)
_SKIN = (205, 150, 120)


def _encode(image: Image.Image, fmt: str, **params: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **params)
    return buffer.getvalue()


def _textured(width: int, height: int, mode: str = "RGB", color: object = _SKIN) -> Image.Image:
    """A flat image with a few small noise patches, so encoders have real detail to work on."""
    image = Image.new(mode, (width, height), color)
    if min(width, height) < _PATCH_SIDE * 2:
        return image
    noise = Image.effect_noise((_PATCH_SIDE, _PATCH_SIDE), 60).convert(mode)
    for fx, fy in ((0.1, 0.1), (0.5, 0.5), (0.8, 0.3), (0.3, 0.8)):
        image.paste(noise, (int((width - _PATCH_SIDE) * fx), int((height - _PATCH_SIDE) * fy)))
    return image


def _png_chunk(kind: bytes, payload: bytes) -> bytes:
    crc = zlib.crc32(kind + payload) & 0xFFFFFFFF
    return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", crc)


def _raw_png(width: int, height: int, bit_depth: int, color_type: int, idat: bytes) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, bit_depth, color_type, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


def jpeg(
    width: int,
    height: int,
    *,
    quality: int = 90,
    color: tuple[int, int, int] = _SKIN,
    progressive: bool = False,
    exif: Image.Exif | None = None,
) -> bytes:
    """A baseline (or progressive) RGB JPEG with a little detail."""
    params: dict[str, object] = {"quality": quality, "progressive": progressive}
    if exif is not None:
        params["exif"] = exif
    return _encode(_textured(width, height, "RGB", color), "JPEG", **params)


def png(width: int, height: int, mode: str = "RGB") -> bytes:
    """A PNG in the given Pillow mode; alpha modes and "P" have a transparent right half."""
    if mode == "P":
        image = Image.new("P", (width, height), 0)
        image.putpalette([255, 255, 255, *_RED, *_BLUE])
        image.paste(1, (0, 0, max(1, width // 2), height))
        return _encode(image, "PNG", transparency=0)
    if mode == "I;16":
        return png16(width, height)
    image = _textured(width, height, "RGB", _RED).convert(mode)
    if "A" in mode:
        alpha = Image.new("L", (width, height), 255)
        alpha.paste(0, (width // 2, 0, width, height))
        image.putalpha(alpha)
    return _encode(image, "PNG")


def png16(width: int = 64, height: int = 48, *, color: bool = False, level: int = 0x8080) -> bytes:
    """A 16-bit PNG (greyscale, or RGB when `color`) filled with one sample value `level`."""
    channels = 3 if color else 1
    row = b"\x00" + struct.pack(">H", level) * channels * width
    idat = zlib.compress(row * height)
    return _raw_png(width, height, 16, 2 if color else 0, idat)


def webp(width: int, height: int, *, lossless: bool = False) -> bytes:
    """A still WebP."""
    return _encode(_textured(width, height), "WEBP", lossless=lossless, quality=80)


def still_image(fmt: str, width: int = 64, height: int = 64) -> bytes:
    """A still image in any format Pillow writes (GIF, BMP, TIFF, ICO, WEBP, ...)."""
    return _encode(_textured(width, height), fmt)


def truncated_jpeg(width: int = 640, height: int = 480) -> bytes:
    """A JPEG cut off halfway: the header is fine, the scan data ends early."""
    data = jpeg(width, height)
    return data[: len(data) // 2]


def text_renamed_jpg() -> bytes:
    """A text file someone renamed to photo.jpg."""
    return b"Dear bot, this is my holiday photo.\nIt is really a text file.\n" * 20


def decompression_bomb_png(width: int = 30000, height: int = 30000) -> bytes:
    """A small, valid 1-bit PNG whose pixels (width x height) would take gigabytes once decoded."""
    return _bomb_png(width, height)


@functools.lru_cache(maxsize=4)
def _bomb_png(width: int, height: int) -> bytes:
    compressor = zlib.compressobj(9)
    row = bytes(1 + (width + 7) // 8)
    idat = b"".join(compressor.compress(row) for _ in range(height)) + compressor.flush()
    return _raw_png(width, height, 1, 0, idat)


def _frames(count: int, width: int, height: int) -> list[Image.Image]:
    colors = [_RED, _BLUE, _SKIN, (30, 200, 30)]
    return [Image.new("RGB", (width, height), colors[i % len(colors)]) for i in range(count)]


def animated_gif(frames: int = 3, width: int = 64, height: int = 64) -> bytes:
    """An animated GIF."""
    first, *rest = _frames(frames, width, height)
    return _encode(first, "GIF", save_all=True, append_images=rest, duration=100, loop=0)


def animated_png(frames: int = 3, width: int = 64, height: int = 64) -> bytes:
    """An animated PNG (APNG): an accepted format, but not a still image."""
    first, *rest = _frames(frames, width, height)
    return _encode(first, "PNG", save_all=True, append_images=rest, duration=100)


def animated_webp(frames: int = 3, width: int = 64, height: int = 64) -> bytes:
    """An animated WebP."""
    first, *rest = _frames(frames, width, height)
    return _encode(first, "WEBP", save_all=True, append_images=rest, duration=100)


def mpo(width: int = 64, height: int = 48) -> bytes:
    """A multi-picture JPEG (MPO) as some phone cameras write: a photo plus a second view."""
    first, second = _frames(2, width, height)
    return _encode(first, "MPO", save_all=True, append_images=[second])


def cmyk_jpeg(width: int = 64, height: int = 64, cmyk: tuple[int, int, int, int] = (0, 255, 255, 0)) -> bytes:
    """A CMYK JPEG (as print workflows produce), red by default."""
    return _encode(Image.new("CMYK", (width, height), cmyk), "JPEG", quality=95)


def exif_rotated_jpeg(orientation: int = 6, width: int = 320, height: int = 160) -> bytes:
    """Landscape pixels (left half red, right half blue) with an EXIF Orientation tag.

    With orientation 6 the photo displays portrait, red half on top.
    """
    image = Image.new("RGB", (width, height), _BLUE)
    image.paste(_RED, (0, 0, width // 2, height))
    exif = Image.Exif()
    exif[0x0112] = orientation
    return _encode(image, "JPEG", quality=95, exif=exif)


def svg() -> bytes:
    """An SVG document with a script in it."""
    return (
        b'<?xml version="1.0" encoding="UTF-8"?>\n'
        b'<svg xmlns="http://www.w3.org/2000/svg" width="512" height="512">'
        b"<script>alert(document.cookie)</script>"
        b'<rect width="512" height="512" fill="red"/></svg>\n'
    )


def heic_like() -> bytes:
    """The start of an iPhone HEIC file: an ISO-BMFF `ftyp` box with the heic brand."""
    ftyp = b"ftyp" + b"heic" + struct.pack(">I", 0) + b"mif1heic"
    meta = b"meta" + bytes(4) + b"hdlr" + bytes(24)
    return struct.pack(">I", 4 + len(ftyp)) + ftyp + struct.pack(">I", 4 + len(meta)) + meta + bytes(256)


def huge_jpeg_over(size: int) -> bytes:
    """A valid small JPEG padded with comment segments until it is larger than `size` bytes."""
    base = jpeg(64, 64)
    payload = bytes(65533)
    segment = b"\xff\xfe" + struct.pack(">H", len(payload) + 2) + payload
    count = max(0, -(-(size + 1 - len(base)) // len(segment)))
    return base[:2] + segment * count + base[2:]


def tiny(width: int = 1, height: int = 1, fmt: str = "PNG") -> bytes:
    """A minuscule image, 1x1 by default."""
    return _encode(Image.new("RGB", (width, height), _RED), fmt)


def extreme_aspect(width: int = 10, height: int = 1000, fmt: str = "PNG") -> bytes:
    """A long, thin strip of an image."""
    return _encode(Image.new("RGB", (width, height), _BLUE), fmt)
