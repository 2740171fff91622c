"""The sandbox's text to image (/v1/aiart/text2img): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.payloads import TaskSpec, text_field
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation, single


def parse(body: dict[str, Any]) -> TaskSpec:
    content = text_field(body, "content", required=True)
    template_id = text_field(body, "templateId", required=True)
    size_id = text_field(body, "sizeId", default="1:1")
    negative = text_field(body, "negativePrompt")
    return TaskSpec("text2img", {}, {"content": content, "template_id": template_id, "size_id": size_id,
                                     "negative_prompt": negative}, prompt=content)


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return single(effects.text_to_image(params["content"], params["template_id"], params["size_id"]))


SANDBOX = SandboxOperation("text2img", "/v1/aiart/text2img", parse, render)
