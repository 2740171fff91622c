"""The sandbox's image to image (art effects) (/v1/aiart/img2img): how its body is read and its result rendered."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from PIL import Image, ImageFilter, ImageOps

from bot.sandbox.effects import colour_for, encode_jpeg, encode_png, tinted, to_rgb
from bot.sandbox.payloads import TaskSpec, choice_field, image_field, number_field, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation

FORMATS = ("jpg", "png")


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


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl")
    template_id = text_field(body, "templateId", required=True)
    content = text_field(body, "content")
    negative = text_field(body, "negativePrompt")
    strength = number_field(body, "strength", required=False, default=0.5, minimum=0.0, maximum=1.0)
    output_format = choice_field(body, "format", FORMATS, default="jpg")
    return TaskSpec("img2img", {"image": image},
                    {"template_id": template_id, "content": content, "negative_prompt": negative,
                     "strength": strength, "format": output_format}, prompt=content)


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    result = art_effect(images["image"], params["template_id"], params["strength"])
    return Rendering((encode_png(result) if params["format"] == "png" else encode_jpeg(result),))


SANDBOX = SandboxOperation("img2img", "/v1/aiart/img2img", parse, render)
