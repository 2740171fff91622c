"""The sandbox's upscale (/v1/aiart/imgupscale): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageFilter

from bot.sandbox.effects import cap_pixels, fit_within, to_rgb
from bot.sandbox.payloads import MAX_DIMENSION, PayloadError, TaskSpec, image_field, integer_field, number_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def upscale(image: Image.Image, factor: int, max_width: int, max_height: int) -> Image.Image:
    """The image × factor, then scaled down proportionally to the maximum box."""
    size = fit_within(image.width * factor, image.height * factor, max_width, max_height)
    size = cap_pixels(*size)
    enlarged = to_rgb(image).resize(size, Image.Resampling.BICUBIC)
    return enlarged.filter(ImageFilter.UnsharpMask(radius=2, percent=80, threshold=2))


def parse(body: dict[str, Any]) -> TaskSpec:
    factor = number_field(body, "upscaling_resize", required=True)
    if factor not in (2.0, 4.0):
        raise PayloadError("upscaling_resize must be 2 or 4")
    image = image_field(body, "userImageUrl")
    max_width = integer_field(body, "max_image_width", required=True, minimum=1, maximum=MAX_DIMENSION)
    max_height = integer_field(body, "max_image_height", required=True, minimum=1, maximum=MAX_DIMENSION)
    return TaskSpec("imgupscale", {"image": image},
                    {"factor": int(factor), "max_width": max_width, "max_height": max_height})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(upscale(images["image"], params["factor"], params["max_width"], params["max_height"]))


SANDBOX = SandboxOperation("imgupscale", "/v1/aiart/imgupscale", parse, render)
