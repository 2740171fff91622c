"""The sandbox's restoration (/v1/aiart/restoration): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageFilter, ImageOps

from bot.sandbox.effects import cap_pixels, to_rgb
from bot.sandbox.payloads import TaskSpec, boolean_field, image_field, number_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def restore(image: Image.Image, factor: float) -> Image.Image:
    """The image × factor, contrast stretched and sharpened."""
    size = cap_pixels(round(image.width * factor), round(image.height * factor))
    enlarged = to_rgb(image).resize(size, Image.Resampling.BICUBIC)
    return ImageOps.autocontrast(enlarged, cutoff=1).filter(ImageFilter.SHARPEN)


def parse(body: dict[str, Any]) -> TaskSpec:
    """All five fields are required by the live service."""
    image = image_field(body, "userImageUrl", url_only=True)
    face_upsample = boolean_field(body, "faceUpsample", required=True)
    background_enhance = boolean_field(body, "backgroundEnhance", required=True)
    upscale = number_field(body, "upscale", required=True, minimum=1.0, maximum=4.0)
    fidelity = number_field(body, "fidelityWeight", required=True, minimum=0.0, maximum=1.0)
    return TaskSpec("restoration", {"image": image},
                    {"face_upsample": face_upsample, "background_enhance": background_enhance,
                     "upscale": upscale, "fidelity_weight": fidelity})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(restore(images["image"], params["upscale"]))


SANDBOX = SandboxOperation("restoration", "/v1/aiart/restoration", parse, render)
