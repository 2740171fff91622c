"""The sandbox's colorize (/v1/aiart/colorize): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.payloads import TaskSpec, boolean_field, image_field, integer_field, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl", url_only=True)
    model_name = text_field(body, "modelName", default="stable")
    render_factor = integer_field(body, "renderFactor", required=False, default=35, minimum=1, maximum=100)
    watermarked = boolean_field(body, "watermarked", required=False)
    return TaskSpec("colorize", {"image": image},
                    {"model_name": model_name, "render_factor": render_factor, "watermarked": watermarked})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(effects.colorize(images["image"], params["watermarked"]))


SANDBOX = SandboxOperation("colorize", "/v1/aiart/colorize", parse, render)
