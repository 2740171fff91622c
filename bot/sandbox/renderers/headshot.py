"""The sandbox's headshots (/v1/aiart/avatar): how its body is read and its result rendered."""

from __future__ import annotations

from typing import Any

from PIL import Image, ImageOps

from bot.sandbox.effects import colour_for, encode_jpeg, tinted, to_rgb
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

HEADSHOT_SIZE = (512, 512)


def headshots(image: Image.Image, templates: list[tuple[str, int]]) -> list[tuple[str, list[Image.Image]]]:
    """num 512×512 portrait crops per template, each template with its own tint."""
    portrait = ImageOps.fit(to_rgb(image), HEADSHOT_SIZE, Image.Resampling.BICUBIC, centering=(0.5, 0.4))
    groups: list[tuple[str, list[Image.Image]]] = []
    for template_id, num in templates:
        colour = colour_for(template_id)
        variants = []
        for index in range(num):
            variant = tinted(portrait, colour, 0.25 + 0.05 * (index % 4))
            variants.append(ImageOps.mirror(variant) if index % 2 else variant)
        groups.append((template_id, variants))
    return groups


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
    groups = headshots(images["image"], params["templates"])
    return Rendering(groups=tuple((template_id, tuple(encode_jpeg(item) for item in items))
                                  for template_id, items in groups))


SANDBOX = SandboxOperation("avatar", "/v1/aiart/avatar", parse, render)
