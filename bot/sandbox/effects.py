"""The sandbox's image work, done with Pillow: plausible stand-ins for each AI operation's effect.

Every function here is synchronous and CPU-bound; the task runner renders in a worker thread.
Geometry is what callers rely on (upscale = input × factor within the maximum, expand = input plus
padding, headshots 512×512, ...); the pixels only need to look like something happened.
"""

from __future__ import annotations

import colorsys
import hashlib
import io
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image, ImageChops, ImageDraw, ImageEnhance, ImageFilter, ImageFont, ImageOps, ImageStat

ACCEPTED_FORMATS = ("JPEG", "PNG", "WEBP", "GIF", "BMP")
MAX_INPUT_PIXELS = 50_000_000
MAX_OUTPUT_PIXELS = 50_000_000
HEADSHOT_SIZE = (512, 512)
TEXT2IMG_LONG_SIDE = 1024
TEXT2IMG_RATIOS = {"1:1": (1, 1), "4:3": (4, 3), "3:4": (3, 4), "16:9": (16, 9), "9:16": (9, 16)}
JPEG_QUALITY = 90
# the skin-retouch input limits stated in part 1 of the API document
RETOUCH_MAX_BYTES = 6 * 1024 * 1024
RETOUCH_MIN_SIDE = 128
RETOUCH_MAX_SIDE = 5000


class InputError(Exception):
    """An input image the service cannot use; the message becomes the failed task's reason."""


@dataclass(frozen=True)
class Rendered:
    """One encoded output image."""

    data: bytes
    suffix: str


@dataclass(frozen=True)
class Rendering:
    """All outputs of one task: plain images, or headshot groups keyed by template id."""

    images: tuple[Rendered, ...] = ()
    groups: tuple[tuple[str, tuple[Rendered, ...]], ...] = ()


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


def upscale(image: Image.Image, factor: int, max_width: int, max_height: int) -> Image.Image:
    """The image × factor, then scaled down proportionally to the maximum box."""
    size = fit_within(image.width * factor, image.height * factor, max_width, max_height)
    size = cap_pixels(*size)
    enlarged = to_rgb(image).resize(size, Image.Resampling.BICUBIC)
    return enlarged.filter(ImageFilter.UnsharpMask(radius=2, percent=80, threshold=2))


def retouch(image: Image.Image) -> Image.Image:
    """Smoothed, slightly brightened skin: a soft blur blended with the original."""
    rgb = to_rgb(image)
    smooth = Image.blend(rgb, rgb.filter(ImageFilter.GaussianBlur(2)), 0.6)
    return ImageEnhance.Brightness(smooth).enhance(1.06)


def text_to_image(content: str, template_id: str, size_id: str) -> Image.Image:
    """A gradient picture with the prompt drawn in it, sized by the aspect ratio sizeId names."""
    ratio_w, ratio_h = TEXT2IMG_RATIOS.get(size_id, (1, 1))
    if ratio_w >= ratio_h:
        size = (TEXT2IMG_LONG_SIDE, TEXT2IMG_LONG_SIDE * ratio_h // ratio_w)
    else:
        size = (TEXT2IMG_LONG_SIDE * ratio_w // ratio_h, TEXT2IMG_LONG_SIDE)
    picture = gradient(size, colour_for(template_id), colour_for(content))
    draw_caption(picture, content)
    return picture


def _posterized(image: Image.Image) -> Image.Image:
    return ImageOps.posterize(image, 3)


def _sketch(image: Image.Image) -> Image.Image:
    edges = ImageOps.invert(image.convert("L").filter(ImageFilter.FIND_EDGES))
    return ImageOps.autocontrast(edges).convert("RGB")


def _embossed(image: Image.Image) -> Image.Image:
    return image.filter(ImageFilter.EMBOSS)


def _solarized(image: Image.Image) -> Image.Image:
    return ImageOps.solarize(image, 128)


ART_EFFECTS: tuple[Callable[[Image.Image], Image.Image], ...] = (_posterized, _sketch, _embossed, _solarized)


def art_effect(image: Image.Image, template_id: str, strength: float) -> Image.Image:
    """An effect chosen by the template, blended with the original by strength."""
    rgb = to_rgb(image)
    effect = ART_EFFECTS[hashlib.sha256(template_id.encode()).digest()[0] % len(ART_EFFECTS)]
    styled = tinted(effect(rgb), colour_for(template_id), 0.2)
    # even strength 0 shows a visible change, as the live effects always do
    return Image.blend(rgb, styled, 0.3 + 0.7 * strength)


def _border_colour(image: Image.Image) -> tuple[int, ...]:
    width, height = image.size
    strips = [image.crop((0, 0, width, 1)), image.crop((0, height - 1, width, height)),
              image.crop((0, 0, 1, height)), image.crop((width - 1, 0, width, height))]
    means = [ImageStat.Stat(strip).mean for strip in strips]
    return tuple(int(sum(channel) / len(means)) for channel in zip(*means))


def remove_background(image: Image.Image) -> Image.Image:
    """An RGBA image of the same size: the border colour and everything outside a centred oval clear."""
    rgb = to_rgb(image)
    width, height = rgb.size
    backdrop = Image.new("RGB", rgb.size, _border_colour(rgb))
    distance = ImageChops.difference(rgb, backdrop).convert("L")
    foreground = distance.point(lambda value: 255 if value > 40 else 0)
    oval = Image.new("L", rgb.size, 0)
    ImageDraw.Draw(oval).ellipse((width * 0.05, height * 0.05, width * 0.95, height * 0.95), fill=255)
    subject = ImageChops.multiply(foreground, oval)
    # a near-uniform picture has no "subject" by colour: keep the oval so the result is not empty
    if ImageStat.Stat(subject).mean[0] < 255 * 0.02:
        subject = oval
    result = rgb.convert("RGBA")
    result.putalpha(subject.filter(ImageFilter.GaussianBlur(1)))
    return result


def headshots(image: Image.Image, templates: list[tuple[str, int]]) -> list[tuple[str, list[Image.Image]]]:
    """num 512×512 portrait crops per template, each template with its own tint."""
    portrait = ImageOps.fit(to_rgb(image), HEADSHOT_SIZE, Image.Resampling.BICUBIC, centering=(0.5, 0.4))
    groups: list[tuple[str, list[Image.Image]]] = []
    for template_id, num in templates:
        colour = colour_for(template_id)
        variants = []
        for index in range(num):
            variant = tinted(portrait, colour, 0.25 + 0.05 * (index % 4))
            variants.append(ImageOps.mirror(variant) if index % 2 else variant)
        groups.append((template_id, variants))
    return groups


def colorize(image: Image.Image, watermarked: bool) -> Image.Image:
    """The image's luminance mapped onto warm colours, so a grey photo comes back tinted."""
    grey = ImageOps.grayscale(to_rgb(image))
    coloured = ImageOps.colorize(grey, black=(25, 15, 45), mid=(190, 110, 70), white=(255, 240, 205))
    if watermarked:
        ImageDraw.Draw(coloured).text((4, 4), "sandbox", fill=(255, 255, 255))
    return coloured


def restore(image: Image.Image, factor: float) -> Image.Image:
    """The image × factor, contrast stretched and sharpened."""
    size = cap_pixels(round(image.width * factor), round(image.height * factor))
    enlarged = to_rgb(image).resize(size, Image.Resampling.BICUBIC)
    return ImageOps.autocontrast(enlarged, cutoff=1).filter(ImageFilter.SHARPEN)


def _oval_mask(size: tuple[int, int]) -> Image.Image:
    mask = Image.new("L", size, 0)
    ImageDraw.Draw(mask).ellipse((0, 0, size[0] - 1, size[1] - 1), fill=255)
    return mask.filter(ImageFilter.GaussianBlur(max(1, min(size) // 20)))


def face_swap(face: Image.Image, template: Image.Image) -> Image.Image:
    """The template image with an oval crop of the face image pasted near its top centre."""
    canvas = to_rgb(template).copy()
    side = max(8, min(canvas.size) // 3)
    patch = ImageOps.fit(to_rgb(face), (side, int(side * 1.25)), Image.Resampling.BICUBIC)
    position = ((canvas.width - patch.width) // 2, max(0, int(canvas.height * 0.4) - patch.height // 2))
    canvas.paste(patch, position, _oval_mask(patch.size))
    return canvas


def expand(image: Image.Image, left: int, top: int, right: int, bottom: int) -> Image.Image:
    """The image on a canvas grown by the padding, the margins a blurred stretch of the image."""
    rgb = to_rgb(image)
    size = (rgb.width + left + right, rgb.height + top + bottom)
    if size[0] * size[1] > MAX_OUTPUT_PIXELS:
        raise InputError(f"expanded image would be too large ({size[0]}x{size[1]})")
    # blur the small version and enlarge it, which is far cheaper than blurring the canvas
    small = rgb.resize((max(1, size[0] // 16), max(1, size[1] // 16)), Image.Resampling.BILINEAR)
    canvas = small.filter(ImageFilter.GaussianBlur(2)).resize(size, Image.Resampling.BICUBIC)
    canvas.paste(rgb, (left, top))
    return canvas


def replace(image: Image.Image, mask: Image.Image, content: str) -> Image.Image:
    """The image with the white part of the mask painted over in a colour chosen by content."""
    rgb = to_rgb(image)
    area = ImageOps.grayscale(to_rgb(mask)).resize(rgb.size).point(lambda value: 255 if value > 127 else 0)
    painted = tinted(rgb.filter(ImageFilter.GaussianBlur(4)), colour_for(content), 0.6)
    return Image.composite(painted, rgb, area)


def generate(width: int, height: int, prompt: str, model_id: str, base: Image.Image | None) -> Image.Image:
    """A width×height picture with the prompt drawn in it, over the given image if there is one."""
    if base is None:
        picture = gradient((width, height), colour_for(model_id), colour_for(prompt))
    else:
        fitted = ImageOps.fit(to_rgb(base), (width, height), Image.Resampling.BICUBIC)
        picture = tinted(fitted, colour_for(prompt), 0.3)
    draw_caption(picture, prompt)
    return picture
