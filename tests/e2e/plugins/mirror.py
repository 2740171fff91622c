"""A throwaway operation: a photo mirrored left to right (the sandbox's endpoint only; the service has none)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require_image
from bot.i18n import lazy
from bot.operations.catalogue import Operation


@dataclass(frozen=True)
class MirrorRequest(Request):
    """Mirror: the image flipped left to right."""

    path: ClassVar[str] = "/v1/aiart/mirror"
    image: ImageRef

    def __post_init__(self) -> None:
        require_image(self.image)

    def payload(self) -> dict[str, Any]:
        return {"imageUrl": self.image}


def entry(styles: object) -> Operation:
    """The catalogue entry (its texts are not translated: a test reads them in English)."""
    return Operation(name="mirror", title="Mirror", summary="Mirror a photo left to right", usage="/mirror",
                     images=1, request_type=MirrorRequest, describe=lambda args: lazy("Mirrored"))
