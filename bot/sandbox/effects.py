"""The sandbox's shared drawing helpers (Pillow): decoding, encoding, colours, sizes, captions, tints.

Each operation's own effect, a plausible stand-in for the AI's, lives in its renderer
(bot.sandbox.renderers.<name>) and draws with these. Every function is synchronous and CPU-bound; the
task runner renders in a worker thread. Geometry is what callers rely on (upscale = input × factor
within the maximum, expand = input plus padding, headshots 512×512, ...); the pixels only need to
look like something happened.
"""

from __future__ import annotations

import colorsys
import hashlib
import io
import textwrap
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont, ImageOps

ACCEPTED_FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP")
MAX_INPUT_PIXELS = 50_000_000
MAX_OUTPUT_PIXELS = 50_000_000
JPEG_QUALITY = 90


class InputError(Exception):
    """An input image the service cannot use; the message becomes the failed task's reason."""


@dataclass(frozen=True)
class Rendered:
    """One encoded output image."""

    data: bytes
    suffix: str


@dataclass(frozen=True)
class Rendering:
    """All outputs of one task: plain images (or a video), or headshot groups keyed by template id."""

    images: tuple[Rendered, ...] = ()
    groups: tuple[tuple[str, tuple[Rendered, ...]], ...] = ()
    #: what the task costs in tokens when not one per output image (a video's seconds times its model's rate)
    tokens: int | None = None


def decode(data: bytes) -> Image.Image:
    """Decode an input image of an accepted format, capped in pixels, upright per its EXIF."""
    try:
        image = Image.open(io.BytesIO(data), formats=ACCEPTED_FORMATS)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        # the warning is raised, not printed, where warnings are turned into errors
        raise InputError("image has too many pixels") from None
    except Exception:
        # hostile files make Pillow's parsers raise all sorts (struct.error, IndexError, ...)
        raise InputError("cannot decode the image: not a JPEG, PNG, WEBP, GIF or BMP file") from None
    if image.width * image.height > MAX_INPUT_PIXELS:
        raise InputError(f"image has too many pixels ({image.width}x{image.height})")
    try:
        image.load()
        return ImageOps.exif_transpose(image)
    except Exception:
        raise InputError("cannot decode the image: the file is corrupt or truncated") from None


def to_rgb(image: Image.Image) -> Image.Image:
    """The image as RGB, transparent parts flattened onto white."""
    try:
        if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
            rgba = image.convert("RGBA")
            flat = Image.new("RGB", rgba.size, (255, 255, 255))
            flat.paste(rgba, mask=rgba.getchannel("A"))
            return flat
        return image.convert("RGB")
    except (ValueError, OSError):
        raise InputError(f"unsupported colour mode {image.mode}") from None


def encode_jpeg(image: Image.Image) -> Rendered:
    """JPEG bytes of an RGB rendering of image."""
    buffer = io.BytesIO()
    to_rgb(image).save(buffer, "JPEG", quality=JPEG_QUALITY)
    return Rendered(buffer.getvalue(), "jpg")


def encode_png(image: Image.Image) -> Rendered:
    """PNG bytes of image, alpha kept."""
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return Rendered(buffer.getvalue(), "png")


def colour_for(key: str) -> tuple[int, int, int]:
    """A saturated colour that is always the same for the same key."""
    hue = int.from_bytes(hashlib.sha256(key.encode()).digest()[:2], "big") / 65535
    red, green, blue = colorsys.hsv_to_rgb(hue, 0.65, 0.9)
    return int(red * 255), int(green * 255), int(blue * 255)


def fit_within(width: int, height: int, max_width: int, max_height: int) -> tuple[int, int]:
    """Width and height scaled down proportionally to fit the box (unchanged when they fit)."""
    if width <= max_width and height <= max_height:
        return width, height
    # integer arithmetic, so the bounding side lands exactly on the maximum
    if max_width * height <= max_height * width:
        return max_width, max(1, height * max_width // width)
    return max(1, width * max_height // height), max_height


def cap_pixels(width: int, height: int, limit: int = MAX_OUTPUT_PIXELS) -> tuple[int, int]:
    """Width and height scaled down proportionally to at most limit pixels."""
    if width * height <= limit:
        return width, height
    scale = (limit / (width * height)) ** 0.5
    return max(1, int(width * scale)), max(1, int(height * scale))


def gradient(size: tuple[int, int], top: tuple[int, int, int], bottom: tuple[int, int, int]) -> Image.Image:
    """A vertical two-colour gradient."""
    mask = Image.linear_gradient("L").resize(size)
    return Image.composite(Image.new("RGB", size, bottom), Image.new("RGB", size, top), mask)


def draw_caption(image: Image.Image, text: str) -> None:
    """Draw text, wrapped and centred, onto image."""
    width, height = image.size
    font_size = max(10, min(width, height) // 16)
    font = ImageFont.load_default(size=font_size)
    chars_per_line = max(8, int(width / (font_size * 0.6)) - 2)
    lines = textwrap.wrap(" ".join(text.split()), chars_per_line)[:8] or [""]
    caption = "\n".join(lines)
    draw = ImageDraw.Draw(image)
    left, top, right, bottom = draw.multiline_textbbox((0, 0), caption, font=font, align="center")
    origin = ((width - (right - left)) / 2 - left, (height - (bottom - top)) / 2 - top)
    draw.multiline_text(origin, caption, font=font, fill=(255, 255, 255), align="center",
                        stroke_width=max(1, font_size // 12), stroke_fill=(0, 0, 0))


def tinted(image: Image.Image, colour: tuple[int, int, int], amount: float) -> Image.Image:
    """image blended towards a solid colour."""
    rgb = to_rgb(image)
    return Image.blend(rgb, Image.new("RGB", rgb.size, colour), amount)


