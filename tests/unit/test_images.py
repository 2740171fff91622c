"""Tests for bot.images: hostile inputs are refused with a reason, good ones come out normalised."""

from __future__ import annotations

import base64
import io
import random
import time

import pytest
from PIL import Image

from bot import images
from bot.images import (
    DEFAULT_LIMITS,
    RETOUCH_LIMITS,
    ImageLimits,
    ImageRejected,
    inspect,
    prepare,
    sniff_mime,
    to_base64,
)
from tests.fakes import samples


def _decode(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def _rejected(data: bytes, limits: ImageLimits = DEFAULT_LIMITS) -> str:
    """The reason `prepare` gives for refusing `data` (and `inspect` agrees it is refused)."""
    with pytest.raises(ImageRejected) as prepared:
        prepare(data, limits)
    with pytest.raises(ImageRejected):
        inspect(data, limits)
    reason = prepared.value.reason
    assert str(prepared.value) == reason
    assert reason.endswith((".", ")")) and len(reason) < 160
    return reason


def _close(actual: tuple[int, ...], expected: tuple[int, ...], tolerance: int = 12) -> bool:
    return all(abs(a - e) <= tolerance for a, e in zip(actual, expected, strict=True))


# --- magic bytes -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (samples.jpeg(32, 32), "image/jpeg"),
        (samples.png(32, 32), "image/png"),
        (samples.webp(32, 32), "image/webp"),
        (samples.animated_gif(), "image/gif"),
        (samples.still_image("BMP"), "image/bmp"),
        (samples.still_image("TIFF"), "image/tiff"),
        (samples.still_image("ICO"), "image/x-icon"),
        (samples.heic_like(), "image/heic"),
        (samples.svg(), "image/svg+xml"),
        (samples.text_renamed_jpg(), None),
        (b"", None),
        (b"\xff\xd8", None),
    ],
    ids=["jpeg", "png", "webp", "gif", "bmp", "tiff", "ico", "heic", "svg", "text", "empty", "short"],
)
def test_sniff_mime_reads_magic_bytes(data: bytes, mime: str | None) -> None:
    assert sniff_mime(data) == mime


# --- hostile samples ---------------------------------------------------------------------------


def test_decompression_bomb_is_rejected_quickly_from_the_header() -> None:
    bomb = samples.decompression_bomb_png()  # 30000x30000: 900 megapixels in ~110 kB
    assert len(bomb) < 200_000
    started = time.perf_counter()
    reason = _rejected(bomb)
    assert time.perf_counter() - started < 1.0
    assert "too large" in reason and "40 megapixels" in reason


def test_pixel_cap_does_not_rely_on_pillows_global(monkeypatch: pytest.MonkeyPatch) -> None:
    # 64 megapixels: under Pillow's own thresholds, over ours; with Pillow's check disabled entirely.
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)
    bomb = samples.decompression_bomb_png(8000, 8000)
    started = time.perf_counter()
    reason = _rejected(bomb)
    assert time.perf_counter() - started < 1.0
    assert "8000×8000" in reason and "megapixels" in reason


def test_pillows_global_pixel_cap_is_left_untouched() -> None:
    before = Image.MAX_IMAGE_PIXELS
    prepare(samples.jpeg(64, 64))
    with pytest.raises(ImageRejected):
        prepare(samples.decompression_bomb_png(8000, 8000))
    assert Image.MAX_IMAGE_PIXELS == before


def test_truncated_jpeg_passes_the_header_check_but_is_rejected_as_damaged() -> None:
    data = samples.truncated_jpeg()
    assert inspect(data).format == "JPEG"
    with pytest.raises(ImageRejected) as rejected:
        prepare(data)
    assert "damaged" in rejected.value.reason


def test_text_renamed_to_jpg_is_not_an_image() -> None:
    reason = _rejected(samples.text_renamed_jpg())
    assert reason == "This file is not an image I can read. Send a JPEG, PNG or WebP photo."


def test_empty_file_is_rejected() -> None:
    assert "empty" in _rejected(b"")


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (samples.animated_gif(), "GIF"),
        (samples.svg(), "SVG"),
        (samples.heic_like(), "HEIC"),
        (samples.still_image("TIFF"), "TIFF"),
        (samples.still_image("BMP"), "BMP"),
    ],
    ids=["gif", "svg", "heic", "tiff", "bmp"],
)
def test_unsupported_formats_are_named_with_the_accepted_ones(data: bytes, kind: str) -> None:
    reason = _rejected(data)
    assert reason.startswith(kind)
    assert "JPEG, PNG or WebP" in reason


@pytest.mark.parametrize("data", [samples.animated_png(), samples.animated_webp()], ids=["apng", "webp"])
def test_animations_in_accepted_formats_ask_for_a_still_image(data: bytes) -> None:
    assert "still image" in _rejected(data)


def test_one_pixel_image_is_too_small() -> None:
    reason = _rejected(samples.tiny())
    assert "too small (1×1 pixels)" in reason and "16 pixels" in reason


@pytest.mark.parametrize(("width", "height"), [(10, 1000), (1000, 40)])
def test_extreme_aspect_ratio_is_rejected(width: int, height: int) -> None:
    reason = _rejected(samples.extreme_aspect(width, height))
    assert "too long and narrow" in reason and "20 times" in reason


def test_file_over_the_byte_cap_is_rejected_before_parsing() -> None:
    data = samples.huge_jpeg_over(DEFAULT_LIMITS.max_bytes)
    assert len(data) > 20 * 1024 * 1024
    assert _decode(data).size == (64, 64)  # a valid JPEG: only its size is wrong
    reason = _rejected(data)
    assert "too large (20.1 MB)" in reason and "under 20 MB" in reason


@pytest.mark.filterwarnings("error")  # Pillow's warnings about broken files must not escape either
def test_corrupted_files_never_leak_pillow_exceptions() -> None:
    rng = random.Random(20240601)
    originals = [
        samples.jpeg(48, 40, progressive=True),
        samples.png(48, 40, "RGBA"),
        samples.webp(48, 40),
        samples.exif_rotated_jpeg(width=48, height=32),
    ]
    accepted = 0
    for _ in range(300):
        data = bytearray(rng.choice(originals))
        if rng.random() < 0.7:
            for _ in range(rng.randint(1, 4)):
                data[rng.randrange(len(data))] = rng.randrange(256)
        else:
            del data[rng.randrange(len(data)) :]
        try:
            prepared = prepare(bytes(data), ImageLimits(min_side=1, max_aspect=10_000))
        except ImageRejected as rejected:
            assert rejected.reason
        else:
            accepted += 1
            assert _decode(prepared.data).size == (prepared.width, prepared.height)
    assert 0 < accepted < 300


# --- normalisation -----------------------------------------------------------------------------


def test_inspect_reports_the_header_without_decoding() -> None:
    info = inspect(samples.webp(120, 90))
    assert (info.format, info.width, info.height, info.frames) == ("WEBP", 120, 90, 1)


def test_cmyk_jpeg_is_converted_to_rgb() -> None:
    prepared = prepare(samples.cmyk_jpeg())
    output = _decode(prepared.data)
    assert (prepared.format, output.format, output.mode) == ("JPEG", "JPEG", "RGB")
    assert _close(output.getpixel((32, 32)), (255, 0, 0), tolerance=20)


@pytest.mark.parametrize("color", [False, True], ids=["grey16", "rgb16"])
def test_16_bit_png_is_scaled_to_8_bit_not_clipped(color: bool) -> None:
    data = samples.png16(64, 48, color=color, level=0x8080)
    assert inspect(data).mode == ("RGB" if color else "I;16")
    output = _decode(prepare(data).data)
    assert output.mode == "RGB"
    assert _close(output.getpixel((10, 10)), (128, 128, 128), tolerance=3)


@pytest.mark.parametrize("mode", ["P", "LA", "RGBA"])
def test_transparency_is_flattened_onto_white_by_default(mode: str) -> None:
    prepared = prepare(samples.png(64, 64, mode))
    output = _decode(prepared.data)
    assert (prepared.mime, output.mode) == ("image/jpeg", "RGB")
    assert _close(output.getpixel((60, 32)), (255, 255, 255))  # right half was transparent
    assert not _close(output.getpixel((4, 32)), (255, 255, 255))


def test_keep_alpha_outputs_png_with_transparency() -> None:
    prepared = prepare(samples.png(64, 64, "RGBA"), ImageLimits(keep_alpha=True))
    output = _decode(prepared.data)
    assert (prepared.format, prepared.mime, prepared.suffix) == ("PNG", "image/png", "png")
    assert (output.format, output.mode) == ("PNG", "RGBA")
    assert output.getpixel((60, 32))[3] == 0 and output.getpixel((4, 32))[3] == 255


def test_keep_alpha_without_transparency_outputs_rgb_png() -> None:
    output = _decode(prepare(samples.jpeg(64, 64), ImageLimits(keep_alpha=True)).data)
    assert (output.format, output.mode) == ("PNG", "RGB")


def test_exif_orientation_6_gives_upright_portrait_without_exif() -> None:
    data = samples.exif_rotated_jpeg(orientation=6, width=320, height=160)
    assert _decode(data).size == (320, 160)
    prepared = prepare(data)
    output = _decode(prepared.data)
    assert (prepared.width, prepared.height) == output.size == (160, 320)
    assert _close(output.getpixel((80, 40)), (220, 30, 30))  # red was the left half, now on top
    assert _close(output.getpixel((80, 280)), (30, 30, 220))
    assert 0x0112 not in output.getexif()  # or viewers would rotate it a second time


def test_exif_orientation_is_applied_before_resizing_to_max_side() -> None:
    data = samples.exif_rotated_jpeg(orientation=6, width=800, height=400)
    prepared = prepare(data, ImageLimits(max_side=200))
    assert (prepared.width, prepared.height) == _decode(prepared.data).size == (100, 200)


def test_multi_picture_jpeg_is_taken_as_its_first_picture() -> None:
    data = samples.mpo(64, 48)
    assert inspect(data) == images.ImageInfo(format="JPEG", width=64, height=48, mode="RGB", frames=1)
    assert _close(_decode(prepare(data).data).getpixel((32, 24)), (220, 30, 30))


@pytest.mark.parametrize(
    ("size", "max_side", "expected"),
    [((4000, 3000), 1000, (1000, 750)), ((4032, 3024), 2048, (2048, 1536)), ((3000, 4000), 2500, (1875, 2500))],
    ids=["quarter-scale", "half-scale-then-up", "full-scale"],
)
def test_large_jpeg_is_resized_exactly_to_max_side(
    size: tuple[int, int], max_side: int, expected: tuple[int, int]
) -> None:
    prepared = prepare(samples.jpeg(*size), ImageLimits(max_side=max_side))
    assert (prepared.width, prepared.height) == _decode(prepared.data).size == expected


def test_no_max_side_keeps_the_original_size() -> None:
    prepared = prepare(samples.png(1200, 300))
    assert (prepared.width, prepared.height) == (1200, 300)


def test_output_is_shrunk_until_it_fits_the_byte_cap() -> None:
    noisy = Image.effect_noise((800, 600), 80).convert("RGB")
    buffer = io.BytesIO()
    noisy.save(buffer, "PNG")
    cap = 60_000
    prepared = prepare(buffer.getvalue(), ImageLimits(output_max_bytes=cap))
    assert len(prepared.data) <= cap
    assert _decode(prepared.data).size == (prepared.width, prepared.height)
    assert prepared.width / prepared.height == pytest.approx(800 / 600, rel=0.02)


# --- skin-retouch limits -----------------------------------------------------------------------


def test_retouch_resizes_6000x4000_to_5000_long_side_under_6_mb() -> None:
    prepared = prepare(samples.jpeg(6000, 4000), RETOUCH_LIMITS)
    assert (prepared.width, prepared.height) == _decode(prepared.data).size == (5000, 3333)
    assert prepared.format == "JPEG" and len(prepared.data) <= 6 * 1024 * 1024


@pytest.mark.parametrize("side", [100, 128])
def test_retouch_rejects_128_pixels_or_less(side: int) -> None:
    reason = _rejected(samples.jpeg(side, side), RETOUCH_LIMITS)
    assert "too small" in reason and "129 pixels" in reason


def test_retouch_accepts_129_pixels() -> None:
    assert inspect(samples.jpeg(129, 129), RETOUCH_LIMITS).width == 129


def test_retouch_rejects_webp_naming_jpeg_and_png() -> None:
    reason = _rejected(samples.webp(400, 300), RETOUCH_LIMITS)
    assert reason == "WebP images are not supported here. Send a JPEG or PNG photo."


# --- encoding helpers --------------------------------------------------------------------------


def test_base64_round_trip_without_data_prefix() -> None:
    prepared = prepare(samples.jpeg(64, 64))
    encoded = prepared.base64()
    assert encoded == to_base64(prepared.data)
    assert not encoded.startswith("data:")
    assert base64.b64decode(encoded, validate=True) == prepared.data
    assert prepared.suffix == "jpg" and prepared.mime == "image/jpeg"
    assert sniff_mime(prepared.data) == "image/jpeg"


def test_image_rejected_is_a_value_error_with_a_reason() -> None:
    error = ImageRejected("Send a photo.")
    assert isinstance(error, ValueError) and error.reason == "Send a photo."
