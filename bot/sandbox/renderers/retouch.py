"""The sandbox's skin retouch (/v1/aiart/retouchskin): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageEnhance, ImageFilter

from bot.sandbox.effects import InputError, to_rgb
from bot.sandbox.payloads import TaskSpec, image_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single

# the skin-retouch input limits stated in part 1 of the API document
RETOUCH_MAX_BYTES = 6 * 1024 * 1024
RETOUCH_MIN_SIDE = 128
RETOUCH_MAX_SIDE = 5000


def retouch(image: Image.Image) -> Image.Image:
    """Smoothed, slightly brightened skin: a soft blur blended with the original."""
    rgb = to_rgb(image)
    smooth = Image.blend(rgb, rgb.filter(ImageFilter.GaussianBlur(2)), 0.6)
    return ImageEnhance.Brightness(smooth).enhance(1.06)


def parse(body: dict[str, Any]) -> TaskSpec:
    return TaskSpec("retouchskin", {"image": image_field(body, "userImageUrl", url_only=True)})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    image = images["image"]
    # the input limits stated in part 1 of the API document
    if len(inputs["image"]) > RETOUCH_MAX_BYTES:
        raise InputError("image file is larger than 6 MB")
    if min(image.size) <= RETOUCH_MIN_SIDE or max(image.size) > RETOUCH_MAX_SIDE:
        low, high = RETOUCH_MIN_SIDE, RETOUCH_MAX_SIDE
        raise InputError(f"image resolution {image.width}x{image.height} is outside {low}x{low} .. {high}x{high}")
    return single(retouch(image))


SANDBOX = SandboxOperation("retouchskin", "/v1/aiart/retouchskin", parse, render)
