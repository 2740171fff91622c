"""The sandbox's image generation (/v1/aiart/imagegeneration/{model_id}): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageOps

from bot.sandbox.effects import colour_for, draw_caption, gradient, tinted, to_rgb
from bot.sandbox.payloads import PayloadError, TaskSpec, field_value, image_field, integer_field, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single

#: generation sizes the provider's client computes reach 6272 px on a side and about 16.8 MP
MAX_GENERATION_SIDE = 8192
MAX_GENERATION_PIXELS = 17_000_000
#: reference images in one generation request; the provider's client sends as many as it is given
MAX_REFERENCE_IMAGES = 8


def generate(width: int, height: int, prompt: str, model_id: str, base: Image.Image | None) -> Image.Image:
    """A width×height picture with the prompt drawn in it, over the given image if there is one."""
    if base is None:
        picture = gradient((width, height), colour_for(model_id), colour_for(prompt))
    else:
        fitted = ImageOps.fit(to_rgb(base), (width, height), Image.Resampling.BICUBIC)
        picture = tinted(fitted, colour_for(prompt), 0.3)
    draw_caption(picture, prompt)
    return picture


def parse(body: dict[str, Any], model_id: str) -> TaskSpec:
    """Sizes and several reference images as the provider's own client sends them."""
    width = integer_field(body, "width", required=True, minimum=64, maximum=MAX_GENERATION_SIDE)
    height = integer_field(body, "height", required=True, minimum=64, maximum=MAX_GENERATION_SIDE)
    if width * height > MAX_GENERATION_PIXELS:
        raise PayloadError(f"width × height must be at most {MAX_GENERATION_PIXELS} pixels")
    raw = field_value(body, "content", required=True)
    if not isinstance(raw, list) or not raw:
        raise PayloadError("content must be a non-empty array")
    texts: list[str] = []
    references: list[str] = []
    for index, item in enumerate(raw):
        where = f"content[{index}]"
        if not isinstance(item, dict):
            raise PayloadError(f"{where} must be an object")
        kind = item.get("type")
        try:
            if kind == "text":
                texts.append(text_field(item, "text", required=True))
            elif kind == "image_url":
                references.append(image_field(item, "url"))
            else:
                raise PayloadError("type must be text or image_url")
        except PayloadError as error:
            raise PayloadError(f"{where}.{error}") from None
    if not texts:
        raise PayloadError("content must hold a text item")
    if len(references) > MAX_REFERENCE_IMAGES:
        raise PayloadError(f"content may hold at most {MAX_REFERENCE_IMAGES} image_url items")
    prompt = "\n".join(texts)
    images = {f"reference{index}": url for index, url in enumerate(references, start=1)}
    return TaskSpec("imagegeneration", images,
                    {"model_id": model_id, "width": width, "height": height, "prompt": prompt,
                     "quality": text_field(body, "quality")}, prompt=prompt)


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(generate(params["width"], params["height"], params["prompt"], params["model_id"],
                                    images.get("reference1")))


SANDBOX = SandboxOperation("imagegeneration", "/v1/aiart/imagegeneration/{model_id}", parse, render)
