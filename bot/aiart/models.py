"""Typed requests and answers of the image service.

Every request is a frozen dataclass that checks its values when built (so an out-of-range value never
reaches the service) and knows its endpoint path and JSON payload. An image is an `ImageRef`: an
https URL the service can fetch, or BASE64-encoded image data.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

ImageRef = str


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


def _require_image(value: ImageRef, name: str = "image") -> None:
    _require(isinstance(value, str) and bool(value), f"{name} must be a non-empty URL or BASE64 string")


@dataclass(frozen=True)
class Request(abc.ABC):
    """Base of all task-creating requests."""

    path: ClassVar[str]
    #: whether the service accepts BASE64 data for this operation's image fields
    accepts_base64: ClassVar[bool] = False
    #: the upload slot's `type` for this operation's images: what the provider's own client sends
    #: (`img_upscale`, `bg_remove`, `img2img`); operations that client does not upload for use `img2img`
    upload_type: ClassVar[str] = "img2img"

    @property
    def endpoint(self) -> str:
        """The path to POST to."""
        return self.path

    @abc.abstractmethod
    def payload(self) -> dict[str, Any]:
        """The JSON body."""


@dataclass(frozen=True)
class UpscaleRequest(Request):
    """AI Upscaler: the image × factor, bounded by max_width × max_height."""

    path: ClassVar[str] = "/v1/aiart/imgupscale"
    accepts_base64: ClassVar[bool] = True
    upload_type: ClassVar[str] = "img_upscale"
    image: ImageRef
    factor: int = 2
    max_width: int = 4096
    max_height: int = 4096

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require(self.factor in (2, 4), "upscale factor must be 2 or 4")
        _require(self.max_width > 0 and self.max_height > 0, "max width and height must be positive")

    def payload(self) -> dict[str, Any]:
        return {"upscaling_resize": self.factor, "userImageUrl": self.image,
                "max_image_width": self.max_width, "max_image_height": self.max_height}


@dataclass(frozen=True)
class RetouchRequest(Request):
    """AI Skin Retouch."""

    path: ClassVar[str] = "/v1/aiart/retouchskin"
    accepts_base64: ClassVar[bool] = False
    image: ImageRef

    def __post_init__(self) -> None:
        _require_image(self.image)

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image}


MAX_PROMPT_CHARS = 1000


def _require_prompt(value: str, *, required: bool, name: str = "prompt") -> None:
    if required:
        _require(bool(value and value.strip()), f"{name} must not be empty")
    _require(len(value) <= MAX_PROMPT_CHARS, f"{name} must be at most {MAX_PROMPT_CHARS} characters")


@dataclass(frozen=True)
class Text2ImgRequest(Request):
    """Text to Image."""

    path: ClassVar[str] = "/v1/aiart/text2img"
    content: str
    template_id: str
    size_id: str = "1:1"
    negative_prompt: str = ""

    def __post_init__(self) -> None:
        _require_prompt(self.content, required=True)
        _require_prompt(self.negative_prompt, required=False, name="negative prompt")
        _require(bool(self.template_id), "template_id must not be empty")
        _require(bool(self.size_id), "size_id must not be empty")

    def payload(self) -> dict[str, Any]:
        body = {"content": self.content, "sizeId": self.size_id, "templateId": self.template_id}
        if self.negative_prompt:
            body["negativePrompt"] = self.negative_prompt
        return body


@dataclass(frozen=True)
class Img2ImgRequest(Request):
    """Image to Image (AI art effects)."""

    path: ClassVar[str] = "/v1/aiart/img2img"
    accepts_base64: ClassVar[bool] = True
    image: ImageRef
    template_id: str
    content: str = ""
    negative_prompt: str = ""
    strength: float = 0.5
    format: str | None = None

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require(bool(self.template_id), "template_id must not be empty")
        _require_prompt(self.content, required=False)
        _require_prompt(self.negative_prompt, required=False, name="negative prompt")
        _require(0.0 <= self.strength <= 1.0, "strength must be between 0 and 1")
        _require(self.format in (None, "jpg", "png"), "format must be jpg or png")

    def payload(self) -> dict[str, Any]:
        body: dict[str, Any] = {"userImageUrl": self.image, "templateId": self.template_id,
                                "strength": self.strength}
        if self.content:
            body["content"] = self.content
        if self.negative_prompt:
            body["negativePrompt"] = self.negative_prompt
        if self.format:
            body["format"] = self.format
        return body


REMOVE_BG_ACTIONS = ("auto", "SegmentBody", "SegmentCommonImage")


@dataclass(frozen=True)
class RemoveBackgroundRequest(Request):
    """Background Remover: an RGBA image of the same size."""

    path: ClassVar[str] = "/v1/aiart/backgroundremover"
    accepts_base64: ClassVar[bool] = True
    upload_type: ClassVar[str] = "bg_remove"
    image: ImageRef
    action: str = "auto"

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require(self.action in REMOVE_BG_ACTIONS, f"action must be one of {', '.join(REMOVE_BG_ACTIONS)}")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "action": self.action}


@dataclass(frozen=True)
class HeadshotTemplate:
    """One headshot style and how many images to make in it."""

    template_id: str
    num: int = 1

    def __post_init__(self) -> None:
        _require(bool(self.template_id), "template_id must not be empty")
        _require(1 <= self.num <= 10, "headshot count must be between 1 and 10")


@dataclass(frozen=True)
class HeadshotRequest(Request):
    """AI Headshot: `num` images for each template; results come in avatarResult."""

    path: ClassVar[str] = "/v1/aiart/avatar"
    image: ImageRef
    templates: tuple[HeadshotTemplate, ...]

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require(len(self.templates) >= 1, "at least one headshot template is needed")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image,
                "avatarTemplateParams": [{"templateId": t.template_id, "num": t.num} for t in self.templates]}


@dataclass(frozen=True)
class ColorizeRequest(Request):
    """Photo Colorize, with the provider plugin's defaults."""

    path: ClassVar[str] = "/v1/aiart/colorize"
    image: ImageRef
    model_name: str = "stable"
    render_factor: int = 35
    watermarked: bool = False

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require(1 <= self.render_factor <= 100, "render factor must be between 1 and 100")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "modelName": self.model_name,
                "renderFactor": self.render_factor, "watermarked": self.watermarked}


@dataclass(frozen=True)
class RestoreRequest(Request):
    """Photo Restoration: all five fields are required by the live service."""

    path: ClassVar[str] = "/v1/aiart/restoration"
    image: ImageRef
    face_upsample: bool = True
    background_enhance: bool = True
    upscale: int = 2
    fidelity_weight: float = 0.5

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require(self.upscale in (1, 2, 3, 4), "restoration upscale must be 1, 2, 3 or 4")
        _require(0.0 <= self.fidelity_weight <= 1.0, "fidelity weight must be between 0 and 1")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "faceUpsample": self.face_upsample,
                "backgroundEnhance": self.background_enhance, "upscale": self.upscale,
                "fidelityWeight": self.fidelity_weight}


@dataclass(frozen=True)
class FaceSwapRequest(Request):
    """Face Swap: the face from `image` placed into `template_image`."""

    path: ClassVar[str] = "/v1/aiart/faceswap"
    accepts_base64: ClassVar[bool] = True
    image: ImageRef
    template_image: ImageRef

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require_image(self.template_image, "template image")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "templateImageUrl": self.template_image}


MAX_PADDING = 2048


@dataclass(frozen=True)
class ExpandRequest(Request):
    """AI Expand: the image with padding added on each side (pixels)."""

    path: ClassVar[str] = "/v1/aiart/extender"
    image: ImageRef
    left: int = 0
    top: int = 0
    right: int = 0
    bottom: int = 0

    def __post_init__(self) -> None:
        _require_image(self.image)
        sides = (self.left, self.top, self.right, self.bottom)
        _require(all(0 <= side <= MAX_PADDING for side in sides), f"padding must be between 0 and {MAX_PADDING}")
        _require(any(sides), "at least one side needs padding")

    def payload(self) -> dict[str, Any]:
        return {"imageUrl": self.image, "padImgLeft": self.left, "padImgTop": self.top,
                "padImgRight": self.right, "padImgBottom": self.bottom}


@dataclass(frozen=True)
class ReplaceRequest(Request):
    """AI Replace: paint `content` where the mask is white."""

    path: ClassVar[str] = "/v1/aiart/replacer"
    accepts_base64: ClassVar[bool] = True
    image: ImageRef
    mask: ImageRef
    content: str

    def __post_init__(self) -> None:
        _require_image(self.image)
        _require_image(self.mask, "mask")
        _require_prompt(self.content, required=True)

    def payload(self) -> dict[str, Any]:
        return {"imageUrl": self.image, "maskImageUrl": self.mask, "content": self.content}


#: generation sizes the provider's client computes reach 6272 px on a side and about 16.8 MP
MAX_GENERATION_SIDE = 8192
MAX_GENERATION_PIXELS = 17_000_000
#: reference images one generation request carries at most (the service states no number)
MAX_REFERENCE_IMAGES = 4


@dataclass(frozen=True)
class ImageGenerationRequest(Request):
    """Image Generation with a given model, from a prompt and optional reference images."""

    path: ClassVar[str] = "/v1/aiart/imagegeneration/{model_id}"
    model_id: str
    prompt: str
    width: int = 1024
    height: int = 1024
    images: tuple[ImageRef, ...] = ()
    #: what the provider's own client always sends
    quality: str = "medium"

    def __post_init__(self) -> None:
        _require(bool(self.model_id) and self.model_id.replace("-", "").replace(".", "").replace("_", "").isalnum(),
                 "model_id must be a plain identifier")
        _require_prompt(self.prompt, required=True)
        _require(64 <= self.width <= MAX_GENERATION_SIDE and 64 <= self.height <= MAX_GENERATION_SIDE,
                 f"width and height must be 64..{MAX_GENERATION_SIDE}")
        _require(self.width * self.height <= MAX_GENERATION_PIXELS,
                 f"width × height must be at most {MAX_GENERATION_PIXELS} pixels")
        _require(len(self.images) <= MAX_REFERENCE_IMAGES, f"at most {MAX_REFERENCE_IMAGES} reference images")
        for image in self.images:
            _require_image(image, "reference image")

    @property
    def endpoint(self) -> str:
        return self.path.format(model_id=self.model_id)

    def payload(self) -> dict[str, Any]:
        content: list[dict[str, str]] = [{"type": "text", "text": self.prompt}]
        content += [{"type": "image_url", "url": image} for image in self.images]
        return {"width": self.width, "height": self.height, "content": content, "quality": self.quality}


class TaskState(enum.StrEnum):
    """What a task's status means to a client."""

    RUNNING = "running"      # status 0
    COMPLETED = "completed"  # status 1: results valid
    FAILED = "failed"        # status 2
    UNKNOWN = "unknown"      # any other value: treated as still running until the deadline


@dataclass(frozen=True)
class Task:
    """One task as the task query reports it."""

    task_id: str
    state: TaskState
    raw_status: int | None
    result_urls: tuple[str, ...] = ()
    reason: str | None = None
    nsfw: bool = False
    type: str | None = None
    created_ms: int | None = None
    updated_ms: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in (TaskState.COMPLETED, TaskState.FAILED)


@dataclass(frozen=True)
class Credits:
    """The account's token balance."""

    total: int
    remaining: int
    business_id: str | None = None


@dataclass(frozen=True)
class UploadSlot:
    """Where to PUT image bytes, and the URL the service then knows them by."""

    upload_url: str
    url: str = field(repr=False)
