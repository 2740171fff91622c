"""The sandbox's expand (/v1/aiart/extender): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageFilter

from bot.sandbox.effects import MAX_OUTPUT_PIXELS, InputError, to_rgb
from bot.sandbox.payloads import MAX_PADDING, TaskSpec, image_field, integer_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


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


def parse(body: dict[str, Any]) -> TaskSpec:
    """Missing sides get no padding."""
    image = image_field(body, "imageUrl", url_only=True)
    padding = {side: integer_field(body, f"padImg{side}", required=False, default=0, minimum=0, maximum=MAX_PADDING)
               for side in ("Left", "Top", "Right", "Bottom")}
    return TaskSpec("extender", {"image": image},
                    {"left": padding["Left"], "top": padding["Top"],
                     "right": padding["Right"], "bottom": padding["Bottom"]})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(expand(images["image"], params["left"], params["top"], params["right"], params["bottom"]))


SANDBOX = SandboxOperation("extender", "/v1/aiart/extender", parse, render)
