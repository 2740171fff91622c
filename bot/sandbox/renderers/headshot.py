"""The sandbox's headshots (/v1/aiart/avatar): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from bot.sandbox import effects
from bot.sandbox.effects import encode_jpeg
from bot.sandbox.payloads import (
    MAX_HEADSHOT_NUM,
    MAX_HEADSHOT_TEMPLATES,
    PayloadError,
    TaskSpec,
    field_value,
    image_field,
    integer_field,
    text_field,
)
from bot.sandbox.renderers.base import Images, Params, Rendering, SandboxOperation


def parse(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl", url_only=True)
    raw = field_value(body, "avatarTemplateParams", required=True)
    if not isinstance(raw, list) or not raw:
        raise PayloadError("avatarTemplateParams must be a non-empty array")
    if len(raw) > MAX_HEADSHOT_TEMPLATES:
        raise PayloadError(f"avatarTemplateParams must have at most {MAX_HEADSHOT_TEMPLATES} entries")
    templates: list[tuple[str, int]] = []
    for index, entry in enumerate(raw):
        where = f"avatarTemplateParams[{index}]"
        if not isinstance(entry, dict):
            raise PayloadError(f"{where} must be an object")
        try:
            template_id = text_field(entry, "templateId", required=True)
            num = integer_field(entry, "num", required=True, minimum=1, maximum=MAX_HEADSHOT_NUM)
        except PayloadError as error:
            raise PayloadError(f"{where}.{error}") from None
        templates.append((template_id, num))
    return TaskSpec("avatar", {"image": image}, {"templates": templates})


def render(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    groups = effects.headshots(images["image"], params["templates"])
    return Rendering(groups=tuple((template_id, tuple(encode_jpeg(item) for item in items))
                                  for template_id, items in groups))


SANDBOX = SandboxOperation("avatar", "/v1/aiart/avatar", parse, render)
