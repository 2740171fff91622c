"""The sandbox's replace (/v1/aiart/replacer): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageFilter, ImageOps

from bot.sandbox.effects import colour_for, tinted, to_rgb
from bot.sandbox.payloads import TaskSpec, image_field, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def replace(image: Image.Image, mask: Image.Image, content: str) -> Image.Image:
    """The image with the white part of the mask painted over in a colour chosen by content."""
    rgb = to_rgb(image)
    area = ImageOps.grayscale(to_rgb(mask)).resize(rgb.size).point(lambda value: 255 if value > 127 else 0)
    painted = tinted(rgb.filter(ImageFilter.GaussianBlur(4)), colour_for(content), 0.6)
    return Image.composite(painted, rgb, area)


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "imageUrl")
    content = text_field(body, "content", required=True)
    mask = image_field(body, "maskImageUrl")
    return TaskSpec("replacer", {"image": image, "mask": mask}, {"content": content}, prompt=content)


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(replace(images["image"], images["mask"], params["content"]))


SANDBOX = SandboxOperation("replacer", "/v1/aiart/replacer", parse, render)
