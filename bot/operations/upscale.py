"""Upscale: a photo enlarged 2× or 4×."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require, require_image
from bot.i18n import N_, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, ArgumentError, InputImage, MenuButton, Operation, option

#: results larger than this on a side are not asked for (the service bounds upscales by max width/height)
UPSCALE_MAX_SIDE = 8192

_FACTOR = re.compile(r"^[x×]?\s*(\d{1,3}(?:\.0)?)\s*[x×]?$", re.IGNORECASE)


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
        require_image(self.image)
        require(self.factor in (2, 4), "upscale factor must be 2 or 4")
        require(self.max_width > 0 and self.max_height > 0, "max width and height must be positive")

    def payload(self) -> dict[str, Any]:
        return {"upscaling_resize": self.factor, "userImageUrl": self.image,
                "max_image_width": self.max_width, "max_image_height": self.max_height}


def parse(text: str) -> Args:
    """The factor, 2 when none is typed ("4", "x4" and "4×" all read as 4)."""
    text = text.strip()
    if not text:
        return {"factor": 2}
    match = _FACTOR.match(text)
    factor = int(float(match.group(1))) if match else None
    if factor not in (2, 4):
        raise ArgumentError(N_("The upscale factor must be 2 or 4, for example /upscale 2"))
    return {"factor": factor}


def build(args: Args, images: Sequence[InputImage]) -> UpscaleRequest:
    """The request: the factor, and the result's size bounded by the largest side asked for."""
    image = images[0]
    factor = args["factor"]
    return UpscaleRequest(image=image.ref, factor=factor, max_width=min(image.width * factor, UPSCALE_MAX_SIDE),
                          max_height=min(image.height * factor, UPSCALE_MAX_SIDE))


def entry(styles: object) -> Operation:
    """The catalogue entry."""
    return Operation(
        name="upscale", title=N_("Upscale"), summary=N_("Enlarge a photo 2× or 4×"), usage=N_("/upscale [2|4]"),
        images=1, request_type=UpscaleRequest, parser=parse, builder=build,
        describe=lambda args: lazy(N_("Upscale ×{factor}"), factor=args["factor"]),
        limits=replace(DEFAULT_LIMITS, max_side=2048), typical_seconds=8, noun=N_("Upscaling"),
        menu=(MenuButton(N_("Upscale 2×"), "2"), MenuButton(N_("Upscale 4×"), "4")), default_choices=("2", "4"),
        cli=(option("--factor", type=int, choices=(2, 4), default=2),))
