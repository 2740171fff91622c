"""Colorize: colour added to a black-and-white photo."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require, require_image
from bot.i18n import N_, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Operation


@dataclass(frozen=True)
class ColorizeRequest(Request):
    """Photo Colorize, with the provider plugin's defaults."""

    path: ClassVar[str] = "/v1/aiart/colorize"
    image: ImageRef
    model_name: str = "stable"
    render_factor: int = 35
    watermarked: bool = False

    def __post_init__(self) -> None:
        require_image(self.image)
        require(1 <= self.render_factor <= 100, "render factor must be between 1 and 100")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "modelName": self.model_name,
                "renderFactor": self.render_factor, "watermarked": self.watermarked}


def entry(styles: object) -> Operation:
    """The catalogue entry."""
    return Operation(
        name="colorize", title=N_("Colorize"), summary=N_("Add colour to a black-and-white photo"),
        usage=N_("/colorize"), images=1, request_type=ColorizeRequest, describe=lambda args: lazy(N_("Colorized")),
        limits=replace(DEFAULT_LIMITS, max_side=4096), typical_seconds=8, noun=N_("Colorizing"))
