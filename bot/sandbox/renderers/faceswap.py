"""The sandbox's face swap (/v1/aiart/faceswap): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageDraw, ImageFilter, ImageOps

from bot.sandbox.effects import to_rgb
from bot.sandbox.payloads import TaskSpec, image_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


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


def parse(body: dict[str, Any]) -> TaskSpec:
    return TaskSpec("faceswap", {"image": image_field(body, "userImageUrl"),
                                 "template": image_field(body, "templateImageUrl")})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(face_swap(images["image"], images["template"]))


SANDBOX = SandboxOperation("faceswap", "/v1/aiart/faceswap", parse, render)
