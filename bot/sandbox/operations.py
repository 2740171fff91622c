"""The sandbox's operations: for each endpoint, how its body is read and how its result is rendered.

Adding an operation to the sandbox is one `SandboxOperation` here (and, when it needs one, an effect
in `bot.sandbox.effects`). The server routes each operation's path to its parser; the task runner
calls `render` with the parsed parameters and the loaded input images.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from bot.sandbox import effects
from bot.sandbox.effects import InputError, Rendering, decode, encode_jpeg, encode_png
from bot.sandbox.payloads import (
    MAX_DIMENSION,
    MAX_HEADSHOT_NUM,
    MAX_HEADSHOT_TEMPLATES,
    MAX_PADDING,
    REMOVE_BG_ACTIONS,
    PayloadError,
    TaskSpec,
    boolean_field,
    choice_field,
    field_value,
    image_field,
    integer_field,
    number_field,
    text_field,
)

__all__ = ["OPERATIONS", "InputError", "Rendering", "SandboxOperation", "render"]

IMG2IMG_FORMATS = ("jpg", "png")
#: generation sizes the provider's client computes reach 6272 px on a side and about 16.8 MP
MAX_GENERATION_SIDE = 8192
MAX_GENERATION_PIXELS = 17_000_000
#: reference images in one generation request; the provider's client sends as many as it is given
MAX_REFERENCE_IMAGES = 8

Params = dict[str, Any]
Images = dict[str, Image.Image]


@dataclass(frozen=True)
class SandboxOperation:
    """One endpoint of the service: its path (aiohttp's route syntax), body parser and renderer."""

    name: str
    path: str
    parse: Callable[..., TaskSpec]  # (body, **path parameters) -> TaskSpec
    render: Callable[[Params, Images, dict[str, bytes]], Rendering]


def _single(image: Image.Image) -> Rendering:
    return Rendering((encode_jpeg(image),))


# --- upscale -----------------------------------------------------------------------------------------

def _parse_upscale(body: dict[str, Any]) -> TaskSpec:
    factor = number_field(body, "upscaling_resize", required=True)
    if factor not in (2.0, 4.0):
        raise PayloadError("upscaling_resize must be 2 or 4")
    image = image_field(body, "userImageUrl")
    max_width = integer_field(body, "max_image_width", required=True, minimum=1, maximum=MAX_DIMENSION)
    max_height = integer_field(body, "max_image_height", required=True, minimum=1, maximum=MAX_DIMENSION)
    return TaskSpec("imgupscale", {"image": image},
                    {"factor": int(factor), "max_width": max_width, "max_height": max_height})


def _render_upscale(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.upscale(images["image"], params["factor"], params["max_width"], params["max_height"]))


# --- skin retouch --------------------------------------------------------------------------------------

def _parse_retouch(body: dict[str, Any]) -> TaskSpec:
    return TaskSpec("retouchskin", {"image": image_field(body, "userImageUrl", url_only=True)})


def _render_retouch(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    image = images["image"]
    # the input limits stated in part 1 of the API document
    if len(inputs["image"]) > effects.RETOUCH_MAX_BYTES:
        raise InputError("image file is larger than 6 MB")
    if min(image.size) <= effects.RETOUCH_MIN_SIDE or max(image.size) > effects.RETOUCH_MAX_SIDE:
        low, high = effects.RETOUCH_MIN_SIDE, effects.RETOUCH_MAX_SIDE
        raise InputError(f"image resolution {image.width}x{image.height} is outside {low}x{low} .. {high}x{high}")
    return _single(effects.retouch(image))


# --- text to image -------------------------------------------------------------------------------------

def _parse_text2img(body: dict[str, Any]) -> TaskSpec:
    content = text_field(body, "content", required=True)
    template_id = text_field(body, "templateId", required=True)
    size_id = text_field(body, "sizeId", default="1:1")
    negative = text_field(body, "negativePrompt")
    return TaskSpec("text2img", {}, {"content": content, "template_id": template_id, "size_id": size_id,
                                     "negative_prompt": negative}, prompt=content)


def _render_text2img(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.text_to_image(params["content"], params["template_id"], params["size_id"]))


# --- image to image (art effects) ----------------------------------------------------------------------

def _parse_img2img(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl")
    template_id = text_field(body, "templateId", required=True)
    content = text_field(body, "content")
    negative = text_field(body, "negativePrompt")
    strength = number_field(body, "strength", required=False, default=0.5, minimum=0.0, maximum=1.0)
    output_format = choice_field(body, "format", IMG2IMG_FORMATS, default="jpg")
    return TaskSpec("img2img", {"image": image},
                    {"template_id": template_id, "content": content, "negative_prompt": negative,
                     "strength": strength, "format": output_format}, prompt=content)


def _render_img2img(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    result = effects.art_effect(images["image"], params["template_id"], params["strength"])
    return Rendering((encode_png(result) if params["format"] == "png" else encode_jpeg(result),))


# --- background removal --------------------------------------------------------------------------------

def _parse_remove_background(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl")
    action = choice_field(body, "action", REMOVE_BG_ACTIONS, default="auto")
    return TaskSpec("backgroundremover", {"image": image}, {"action": action})


def _render_remove_background(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return Rendering((encode_png(effects.remove_background(images["image"])),))


# --- headshots -----------------------------------------------------------------------------------------

def _parse_headshot(body: dict[str, Any]) -> TaskSpec:
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


def _render_headshots(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    groups = effects.headshots(images["image"], params["templates"])
    return Rendering(groups=tuple((template_id, tuple(encode_jpeg(item) for item in items))
                                  for template_id, items in groups))


# --- colorize ------------------------------------------------------------------------------------------

def _parse_colorize(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "userImageUrl", url_only=True)
    model_name = text_field(body, "modelName", default="stable")
    render_factor = integer_field(body, "renderFactor", required=False, default=35, minimum=1, maximum=100)
    watermarked = boolean_field(body, "watermarked", required=False)
    return TaskSpec("colorize", {"image": image},
                    {"model_name": model_name, "render_factor": render_factor, "watermarked": watermarked})


def _render_colorize(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.colorize(images["image"], params["watermarked"]))


# --- restoration ---------------------------------------------------------------------------------------

def _parse_restoration(body: dict[str, Any]) -> TaskSpec:
    """All five fields are required by the live service."""
    image = image_field(body, "userImageUrl", url_only=True)
    face_upsample = boolean_field(body, "faceUpsample", required=True)
    background_enhance = boolean_field(body, "backgroundEnhance", required=True)
    upscale = number_field(body, "upscale", required=True, minimum=1.0, maximum=4.0)
    fidelity = number_field(body, "fidelityWeight", required=True, minimum=0.0, maximum=1.0)
    return TaskSpec("restoration", {"image": image},
                    {"face_upsample": face_upsample, "background_enhance": background_enhance,
                     "upscale": upscale, "fidelity_weight": fidelity})


def _render_restoration(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.restore(images["image"], params["upscale"]))


# --- face swap -----------------------------------------------------------------------------------------

def _parse_faceswap(body: dict[str, Any]) -> TaskSpec:
    return TaskSpec("faceswap", {"image": image_field(body, "userImageUrl"),
                                 "template": image_field(body, "templateImageUrl")})


def _render_faceswap(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.face_swap(images["image"], images["template"]))


# --- expand --------------------------------------------------------------------------------------------

def _parse_expand(body: dict[str, Any]) -> TaskSpec:
    """Missing sides get no padding."""
    image = image_field(body, "imageUrl", url_only=True)
    padding = {side: integer_field(body, f"padImg{side}", required=False, default=0, minimum=0, maximum=MAX_PADDING)
               for side in ("Left", "Top", "Right", "Bottom")}
    return TaskSpec("extender", {"image": image},
                    {"left": padding["Left"], "top": padding["Top"],
                     "right": padding["Right"], "bottom": padding["Bottom"]})


def _render_expand(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.expand(images["image"], params["left"], params["top"], params["right"], params["bottom"]))


# --- replace -------------------------------------------------------------------------------------------

def _parse_replace(body: dict[str, Any]) -> TaskSpec:
    image = image_field(body, "imageUrl")
    content = text_field(body, "content", required=True)
    mask = image_field(body, "maskImageUrl")
    return TaskSpec("replacer", {"image": image, "mask": mask}, {"content": content}, prompt=content)


def _render_replace(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.replace(images["image"], images["mask"], params["content"]))


# --- image generation ----------------------------------------------------------------------------------

def _parse_generation(body: dict[str, Any], model_id: str) -> TaskSpec:
    """Sizes and several reference images as the provider's own client sends them."""
    width = integer_field(body, "width", required=True, minimum=64, maximum=MAX_GENERATION_SIDE)
    height = integer_field(body, "height", required=True, minimum=64, maximum=MAX_GENERATION_SIDE)
    if width * height > MAX_GENERATION_PIXELS:
        raise PayloadError(f"width × height must be at most {MAX_GENERATION_PIXELS} pixels")
    raw = field_value(body, "content", required=True)
    if not isinstance(raw, list) or not raw:
        raise PayloadError("content must be a non-empty array")
    texts: list[str] = []
    references: list[str] = []
    for index, item in enumerate(raw):
        where = f"content[{index}]"
        if not isinstance(item, dict):
            raise PayloadError(f"{where} must be an object")
        kind = item.get("type")
        try:
            if kind == "text":
                texts.append(text_field(item, "text", required=True))
            elif kind == "image_url":
                references.append(image_field(item, "url"))
            else:
                raise PayloadError("type must be text or image_url")
        except PayloadError as error:
            raise PayloadError(f"{where}.{error}") from None
    if not texts:
        raise PayloadError("content must hold a text item")
    if len(references) > MAX_REFERENCE_IMAGES:
        raise PayloadError(f"content may hold at most {MAX_REFERENCE_IMAGES} image_url items")
    prompt = "\n".join(texts)
    images = {f"reference{index}": url for index, url in enumerate(references, start=1)}
    return TaskSpec("imagegeneration", images,
                    {"model_id": model_id, "width": width, "height": height, "prompt": prompt,
                     "quality": text_field(body, "quality")}, prompt=prompt)


def _render_generation(params: Params, images: Images, inputs: dict[str, bytes]) -> Rendering:
    return _single(effects.generate(params["width"], params["height"], params["prompt"], params["model_id"],
                                    images.get("reference1")))


OPERATIONS: dict[str, SandboxOperation] = {operation.name: operation for operation in (
    SandboxOperation("imgupscale", "/v1/aiart/imgupscale", _parse_upscale, _render_upscale),
    SandboxOperation("retouchskin", "/v1/aiart/retouchskin", _parse_retouch, _render_retouch),
    SandboxOperation("text2img", "/v1/aiart/text2img", _parse_text2img, _render_text2img),
    SandboxOperation("img2img", "/v1/aiart/img2img", _parse_img2img, _render_img2img),
    SandboxOperation("backgroundremover", "/v1/aiart/backgroundremover", _parse_remove_background,
                     _render_remove_background),
    SandboxOperation("avatar", "/v1/aiart/avatar", _parse_headshot, _render_headshots),
    SandboxOperation("colorize", "/v1/aiart/colorize", _parse_colorize, _render_colorize),
    SandboxOperation("restoration", "/v1/aiart/restoration", _parse_restoration, _render_restoration),
    SandboxOperation("faceswap", "/v1/aiart/faceswap", _parse_faceswap, _render_faceswap),
    SandboxOperation("extender", "/v1/aiart/extender", _parse_expand, _render_expand),
    SandboxOperation("replacer", "/v1/aiart/replacer", _parse_replace, _render_replace),
    SandboxOperation("imagegeneration", "/v1/aiart/imagegeneration/{model_id}", _parse_generation,
                     _render_generation),
)}


def render(operation: str, params: Params, inputs: dict[str, bytes]) -> Rendering:
    """Do the work of one task; raises InputError when an input cannot be used."""
    return OPERATIONS[operation].render(params, {role: decode(data) for role, data in inputs.items()}, inputs)
