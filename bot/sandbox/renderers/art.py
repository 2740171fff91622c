"""The sandbox's image to image (art effects) (/v1/aiart/img2img): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.effects import encode_jpeg, encode_png
from bot.sandbox.payloads import TaskSpec, choice_field, image_field, number_field, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation

FORMATS = ("jpg", "png")


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
    result = effects.art_effect(images["image"], params["template_id"], params["strength"])
    return Rendering((encode_png(result) if params["format"] == "png" else encode_jpeg(result),))


SANDBOX = SandboxOperation("img2img", "/v1/aiart/img2img", parse, render)
