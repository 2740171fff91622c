"""The sandbox's replace (/v1/aiart/replacer): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.payloads import TaskSpec, image_field, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "imageUrl")
    content = text_field(body, "content", required=True)
    mask = image_field(body, "maskImageUrl")
    return TaskSpec("replacer", {"image": image, "mask": mask}, {"content": content}, prompt=content)


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(effects.replace(images["image"], images["mask"], params["content"]))


SANDBOX = SandboxOperation("replacer", "/v1/aiart/replacer", parse, render)
