"""The sandbox's expand (/v1/aiart/extender): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.payloads import MAX_PADDING, TaskSpec, image_field, integer_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def parse(body: dict[str, Any]) -> TaskSpec:
    """Missing sides get no padding."""
    image = image_field(body, "imageUrl", url_only=True)
    padding = {side: integer_field(body, f"padImg{side}", required=False, default=0, minimum=0, maximum=MAX_PADDING)
               for side in ("Left", "Top", "Right", "Bottom")}
    return TaskSpec("extender", {"image": image},
                    {"left": padding["Left"], "top": padding["Top"],
                     "right": padding["Right"], "bottom": padding["Bottom"]})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(effects.expand(images["image"], params["left"], params["top"], params["right"], params["bottom"]))


SANDBOX = SandboxOperation("extender", "/v1/aiart/extender", parse, render)
