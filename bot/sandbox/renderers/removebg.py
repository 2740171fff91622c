"""The sandbox's background removal (/v1/aiart/backgroundremover): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.effects import encode_png
from bot.sandbox.payloads import REMOVE_BG_ACTIONS, TaskSpec, choice_field, image_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl")
    action = choice_field(body, "action", REMOVE_BG_ACTIONS, default="auto")
    return TaskSpec("backgroundremover", {"image": image}, {"action": action})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return Rendering((encode_png(effects.remove_background(images["image"])),))


SANDBOX = SandboxOperation("backgroundremover", "/v1/aiart/backgroundremover", parse, render)
