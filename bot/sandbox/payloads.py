"""Validation of task-creating request bodies, field by field, as the live service would check them.

Each parser turns a JSON body into a `TaskSpec` or raises `PayloadError` with a message that names
the offending field (answered as HTTP 400). Required fields follow part 2 of the API notes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_TEXT_CHARS = 2000
MAX_PADDING = 2048
MAX_DIMENSION = 16384
MAX_HEADSHOT_NUM = 10
MAX_HEADSHOT_TEMPLATES = 10
REMOVE_BG_ACTIONS = ("auto", "SegmentBody", "SegmentCommonImage")
IMG2IMG_FORMATS = ("jpg", "png")
_OTHER_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class PayloadError(ValueError):
    """The body is incomplete or malformed; the message names the field."""


@dataclass(frozen=True)
class TaskSpec:
    """A validated request: the operation, its input images by role, and its parameters."""

    operation: str
    images: dict[str, str]
    params: dict[str, Any] = field(default_factory=dict)
    #: the user's text, checked for the sandbox's failure triggers
    prompt: str = ""


_MISSING = object()


def _get(body: dict[str, Any], name: str, required: bool) -> Any:
    value = body.get(name, _MISSING)
    if value is None:
        value = _MISSING
    if value is _MISSING and required:
        raise PayloadError(f"{name} is required")
    return value


def _image(body: dict[str, Any], name: str, *, url_only: bool = False) -> str:
    """An image field; `url_only` where the interface documents a URL and no BASE64."""
    value = _get(body, name, required=True)
    if not isinstance(value, str) or not value.strip():
        raise PayloadError(f"{name} must be a non-empty image URL or BASE64 string")
    value = value.strip()
    is_url = value.lower().startswith(("http://", "https://"))
    if _OTHER_SCHEME.match(value) and not is_url:
        raise PayloadError(f"{name} must be an http(s) URL or BASE64 image data")
    if url_only and not is_url:
        raise PayloadError(f"{name} must be an http(s) image URL")
    return value


def _text(body: dict[str, Any], name: str, *, required: bool = False, default: str = "") -> str:
    value = _get(body, name, required)
    if value is _MISSING:
        return default
    if not isinstance(value, str):
        raise PayloadError(f"{name} must be a string")
    if required and not value.strip():
        raise PayloadError(f"{name} must not be empty")
    if len(value) > MAX_TEXT_CHARS:
        raise PayloadError(f"{name} must be at most {MAX_TEXT_CHARS} characters")
    return value


def _number(body: dict[str, Any], name: str, *, required: bool, default: float | None = None,
            minimum: float | None = None, maximum: float | None = None) -> float | None:
    value = _get(body, name, required)
    if value is _MISSING:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise PayloadError(f"{name} must be a number")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise PayloadError(f"{name} must be between {minimum:g} and {maximum:g}")
    return float(value)


def _integer(body: dict[str, Any], name: str, *, required: bool, default: int | None = None,
             minimum: int | None = None, maximum: int | None = None) -> int | None:
    value = _get(body, name, required)
    if value is _MISSING:
        return default
    # a Java-style backend coerces 2.0 to 2, but not 2.5
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PayloadError(f"{name} must be an integer")
    if minimum is not None and value < minimum:
        raise PayloadError(f"{name} must be at least {minimum}")
    if maximum is not None and value > maximum:
        raise PayloadError(f"{name} must be at most {maximum}")
    return value


def _boolean(body: dict[str, Any], name: str, *, required: bool, default: bool = False) -> bool:
    value = _get(body, name, required)
    if value is _MISSING:
        return default
    if not isinstance(value, bool):
        raise PayloadError(f"{name} must be true or false")
    return value


def _choice(body: dict[str, Any], name: str, choices: tuple[str, ...], default: str | None) -> str | None:
    value = _get(body, name, required=False)
    if value is _MISSING:
        return default
    if value not in choices:
        raise PayloadError(f"{name} must be one of {', '.join(choices)}")
    return value


def parse_upscale(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/imgupscale."""
    factor = _number(body, "upscaling_resize", required=True)
    if factor not in (2.0, 4.0):
        raise PayloadError("upscaling_resize must be 2 or 4")
    image = _image(body, "userImageUrl")
    max_width = _integer(body, "max_image_width", required=True, minimum=1, maximum=MAX_DIMENSION)
    max_height = _integer(body, "max_image_height", required=True, minimum=1, maximum=MAX_DIMENSION)
    return TaskSpec("imgupscale", {"image": image},
                    {"factor": int(factor), "max_width": max_width, "max_height": max_height})


def parse_retouch(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/retouchskin."""
    return TaskSpec("retouchskin", {"image": _image(body, "userImageUrl", url_only=True)})


def parse_text2img(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/text2img."""
    content = _text(body, "content", required=True)
    template_id = _text(body, "templateId", required=True)
    size_id = _text(body, "sizeId", default="1:1")
    negative = _text(body, "negativePrompt")
    return TaskSpec("text2img", {}, {"content": content, "template_id": template_id, "size_id": size_id,
                                     "negative_prompt": negative}, prompt=content)


def parse_img2img(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/img2img."""
    image = _image(body, "userImageUrl")
    template_id = _text(body, "templateId", required=True)
    content = _text(body, "content")
    negative = _text(body, "negativePrompt")
    strength = _number(body, "strength", required=False, default=0.5, minimum=0.0, maximum=1.0)
    output_format = _choice(body, "format", IMG2IMG_FORMATS, default="jpg")
    return TaskSpec("img2img", {"image": image},
                    {"template_id": template_id, "content": content, "negative_prompt": negative,
                     "strength": strength, "format": output_format}, prompt=content)


def parse_remove_background(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/backgroundremover."""
    image = _image(body, "userImageUrl")
    action = _choice(body, "action", REMOVE_BG_ACTIONS, default="auto")
    return TaskSpec("backgroundremover", {"image": image}, {"action": action})


def parse_headshot(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/avatar."""
    image = _image(body, "userImageUrl", url_only=True)
    raw = _get(body, "avatarTemplateParams", required=True)
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
            template_id = _text(entry, "templateId", required=True)
            num = _integer(entry, "num", required=True, minimum=1, maximum=MAX_HEADSHOT_NUM)
        except PayloadError as error:
            raise PayloadError(f"{where}.{error}") from None
        templates.append((template_id, num))
    return TaskSpec("avatar", {"image": image}, {"templates": templates})


def parse_colorize(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/colorize."""
    image = _image(body, "userImageUrl", url_only=True)
    model_name = _text(body, "modelName", default="stable")
    render_factor = _integer(body, "renderFactor", required=False, default=35, minimum=1, maximum=100)
    watermarked = _boolean(body, "watermarked", required=False)
    return TaskSpec("colorize", {"image": image},
                    {"model_name": model_name, "render_factor": render_factor, "watermarked": watermarked})


def parse_restoration(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/restoration: all five fields are required."""
    image = _image(body, "userImageUrl", url_only=True)
    face_upsample = _boolean(body, "faceUpsample", required=True)
    background_enhance = _boolean(body, "backgroundEnhance", required=True)
    upscale = _number(body, "upscale", required=True, minimum=1.0, maximum=4.0)
    fidelity = _number(body, "fidelityWeight", required=True, minimum=0.0, maximum=1.0)
    return TaskSpec("restoration", {"image": image},
                    {"face_upsample": face_upsample, "background_enhance": background_enhance,
                     "upscale": upscale, "fidelity_weight": fidelity})


def parse_faceswap(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/faceswap."""
    face = _image(body, "userImageUrl")
    template = _image(body, "templateImageUrl")
    return TaskSpec("faceswap", {"image": face, "template": template})


def parse_expand(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/extender: missing sides get no padding."""
    image = _image(body, "imageUrl", url_only=True)
    padding = {side: _integer(body, f"padImg{side}", required=False, default=0, minimum=0, maximum=MAX_PADDING)
               for side in ("Left", "Top", "Right", "Bottom")}
    return TaskSpec("extender", {"image": image},
                    {"left": padding["Left"], "top": padding["Top"],
                     "right": padding["Right"], "bottom": padding["Bottom"]})


def parse_replace(body: dict[str, Any]) -> TaskSpec:
    """POST /v1/aiart/replacer."""
    image = _image(body, "imageUrl")
    content = _text(body, "content", required=True)
    mask = _image(body, "maskImageUrl")
    return TaskSpec("replacer", {"image": image, "mask": mask}, {"content": content}, prompt=content)


def parse_image_generation(body: dict[str, Any], model_id: str) -> TaskSpec:
    """POST /v1/aiart/imagegeneration/{modelId}."""
    width = _integer(body, "width", required=True, minimum=64, maximum=4096)
    height = _integer(body, "height", required=True, minimum=64, maximum=4096)
    raw = _get(body, "content", required=True)
    if not isinstance(raw, list) or not raw:
        raise PayloadError("content must be a non-empty array")
    texts: list[str] = []
    images: dict[str, str] = {}
    for index, item in enumerate(raw):
        where = f"content[{index}]"
        if not isinstance(item, dict):
            raise PayloadError(f"{where} must be an object")
        kind = item.get("type")
        try:
            if kind == "text":
                texts.append(_text(item, "text", required=True))
            elif kind == "image_url":
                if images:
                    raise PayloadError("url: only one image_url item is supported")
                images["image"] = _image(item, "url")
            else:
                raise PayloadError("type must be text or image_url")
        except PayloadError as error:
            raise PayloadError(f"{where}.{error}") from None
    if not texts:
        raise PayloadError("content must hold a text item")
    quality = _text(body, "quality")
    prompt = "\n".join(texts)
    return TaskSpec("imagegeneration", images,
                    {"model_id": model_id, "width": width, "height": height, "prompt": prompt,
                     "quality": quality}, prompt=prompt)


PARSERS: dict[str, Callable[[dict[str, Any]], TaskSpec]] = {
    "imgupscale": parse_upscale,
    "retouchskin": parse_retouch,
    "text2img": parse_text2img,
    "img2img": parse_img2img,
    "backgroundremover": parse_remove_background,
    "avatar": parse_headshot,
    "colorize": parse_colorize,
    "restoration": parse_restoration,
    "faceswap": parse_faceswap,
    "extender": parse_expand,
    "replacer": parse_replace,
}
