"""The sandbox's renderer for the throwaway mirror operation."""

from __future__ import annotations

from typing import Any

from PIL import ImageOps

from bot.sandbox.payloads import TaskSpec, image_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def parse(body: dict[str, Any]) -> TaskSpec:
    return TaskSpec("mirror", {"image": image_field(body, "imageUrl")})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(ImageOps.mirror(images["image"]))


SANDBOX = SandboxOperation("mirror", "/v1/aiart/mirror", parse, render)
