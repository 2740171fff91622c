"""Face swap: the face from one photo put into another."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require_image
from bot.i18n import N_, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, InputImage, Operation


@dataclass(frozen=True)
class FaceSwapRequest(Request):
    """Face Swap: the face from `image` placed into `template_image`."""

    path: ClassVar[str] = "/v1/aiart/faceswap"
    accepts_base64: ClassVar[bool] = True
    image: ImageRef
    template_image: ImageRef

    def __post_init__(self) -> None:
        require_image(self.image)
        require_image(self.template_image, "template image")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "templateImageUrl": self.template_image}


def build(args: Args, images: Sequence[InputImage]) -> FaceSwapRequest:
    """The request: the face photo first, the template second."""
    return FaceSwapRequest(image=images[0].ref, template_image=images[1].ref)


def entry(styles: object) -> Operation:
    """The catalogue entry."""
    return Operation(
        name="faceswap", title=N_("Face swap"), summary=N_("Put a face into another photo"), usage=N_("/faceswap"),
        images=2, request_type=FaceSwapRequest, builder=build, describe=lambda args: lazy(N_("Face swap")),
        limits=replace(DEFAULT_LIMITS, max_side=2048), image_names=(N_("face photo"), N_("template photo")),
        typical_seconds=10)
