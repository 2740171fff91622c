"""The sandbox's text to image (/v1/aiart/text2img): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image

from bot.sandbox.effects import colour_for, draw_caption, gradient
from bot.sandbox.payloads import TaskSpec, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single

TEXT2IMG_LONG_SIDE = 1024
TEXT2IMG_RATIOS = {"1:1": (1, 1), "4:3": (4, 3), "3:4": (3, 4), "16:9": (16, 9), "9:16": (9, 16)}


def text_to_image(content: str, template_id: str, size_id: str) -> Image.Image:
    """A gradient picture with the prompt drawn in it, sized by the aspect ratio sizeId names."""
    ratio_w, ratio_h = TEXT2IMG_RATIOS.get(size_id, (1, 1))
    if ratio_w >= ratio_h:
        size = (TEXT2IMG_LONG_SIDE, TEXT2IMG_LONG_SIDE * ratio_h // ratio_w)
    else:
        size = (TEXT2IMG_LONG_SIDE * ratio_w // ratio_h, TEXT2IMG_LONG_SIDE)
    picture = gradient(size, colour_for(template_id), colour_for(content))
    draw_caption(picture, content)
    return picture


def parse(body: dict[str, Any]) -> TaskSpec:
    content = text_field(body, "content", required=True)
    template_id = text_field(body, "templateId", required=True)
    size_id = text_field(body, "sizeId", default="1:1")
    negative = text_field(body, "negativePrompt")
    return TaskSpec("text2img", {}, {"content": content, "template_id": template_id, "size_id": size_id,
                                     "negative_prompt": negative}, prompt=content)


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(text_to_image(params["content"], params["template_id"], params["size_id"]))


SANDBOX = SandboxOperation("text2img", "/v1/aiart/text2img", parse, render)
