"""The sandbox's face swap (/v1/aiart/faceswap): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.payloads import TaskSpec, image_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def parse(body: dict[str, Any]) -> TaskSpec:
    return TaskSpec("faceswap", {"image": image_field(body, "userImageUrl"),
                                 "template": image_field(body, "templateImageUrl")})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(effects.face_swap(images["image"], images["template"]))


SANDBOX = SandboxOperation("faceswap", "/v1/aiart/faceswap", parse, render)
