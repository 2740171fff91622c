"""The sandbox's colorize (/v1/aiart/colorize): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageDraw, ImageOps

from bot.sandbox.effects import to_rgb
from bot.sandbox.payloads import TaskSpec, boolean_field, image_field, integer_field, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def colorize(image: Image.Image, watermarked: bool) -> Image.Image:
    """The image's luminance mapped onto warm colours, so a grey photo comes back tinted."""
    grey = ImageOps.grayscale(to_rgb(image))
    coloured = ImageOps.colorize(grey, black=(25, 15, 45), mid=(190, 110, 70), white=(255, 240, 205))
    if watermarked:
        ImageDraw.Draw(coloured).text((4, 4), "sandbox", fill=(255, 255, 255))
    return coloured


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl", url_only=True)
    model_name = text_field(body, "modelName", default="stable")
    render_factor = integer_field(body, "renderFactor", required=False, default=35, minimum=1, maximum=100)
    watermarked = boolean_field(body, "watermarked", required=False)
    return TaskSpec("colorize", {"image": image},
                    {"model_name": model_name, "render_factor": render_factor, "watermarked": watermarked})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(colorize(images["image"], params["watermarked"]))


SANDBOX = SandboxOperation("colorize", "/v1/aiart/colorize", parse, render)
