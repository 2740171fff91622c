"""Skin retouch: smoother skin in a portrait."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require_image
from bot.i18n import N_, lazy
from bot.images import RETOUCH_LIMITS
from bot.operations.catalogue import Operation


@dataclass(frozen=True)
class RetouchRequest(Request):
    """AI Skin Retouch."""

    path: ClassVar[str] = "/v1/aiart/retouchskin"
    accepts_base64: ClassVar[bool] = False
    image: ImageRef

    def __post_init__(self) -> None:
        require_image(self.image)

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image}


def entry(styles: object) -> Operation:
    """The catalogue entry."""
    return Operation(
        name="retouch", title=N_("Skin retouch"), summary=N_("Smooth skin in a portrait"), usage=N_("/retouch"),
        images=1, request_type=RetouchRequest, describe=lambda args: lazy(N_("Skin retouch")),
        limits=RETOUCH_LIMITS, typical_seconds=8)
