"""Restore: an old or damaged photo repaired."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require, require_image
from bot.i18n import N_, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Operation


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
        require_image(self.image)
        require(self.upscale in (1, 2, 3, 4), "restoration upscale must be 1, 2, 3 or 4")
        require(0.0 <= self.fidelity_weight <= 1.0, "fidelity weight must be between 0 and 1")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "faceUpsample": self.face_upsample,
                "backgroundEnhance": self.background_enhance, "upscale": self.upscale,
                "fidelityWeight": self.fidelity_weight}


def entry(styles: object) -> Operation:
    """The catalogue entry."""
    return Operation(
        name="restore", title=N_("Restore"), summary=N_("Repair an old or damaged photo"), usage=N_("/restore"),
        images=1, request_type=RestoreRequest, describe=lambda args: lazy(N_("Restored")),
        limits=replace(DEFAULT_LIMITS, max_side=2048), typical_seconds=10, noun=N_("Restoration"))
