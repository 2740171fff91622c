"""The sandbox's skin retouch (/v1/aiart/retouchskin): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.effects import InputError
from bot.sandbox.payloads import TaskSpec, image_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def parse(body: dict[str, Any]) -> TaskSpec:
    return TaskSpec("retouchskin", {"image": image_field(body, "userImageUrl", url_only=True)})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    image = images["image"]
    # the input limits stated in part 1 of the API document
    if len(inputs["image"]) > effects.RETOUCH_MAX_BYTES:
        raise InputError("image file is larger than 6 MB")
    if min(image.size) <= effects.RETOUCH_MIN_SIDE or max(image.size) > effects.RETOUCH_MAX_SIDE:
        low, high = effects.RETOUCH_MIN_SIDE, effects.RETOUCH_MAX_SIDE
        raise InputError(f"image resolution {image.width}x{image.height} is outside {low}x{low} .. {high}x{high}")
    return single(effects.retouch(image))


SANDBOX = SandboxOperation("retouchskin", "/v1/aiart/retouchskin", parse, render)
