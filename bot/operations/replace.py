"""Replace: something painted where a mask is white."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace as changed
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require_image, require_prompt
from bot.i18n import N_, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, InputImage, Operation, option
from bot.operations.parsing import check_prompt


@dataclass(frozen=True)
class ReplaceRequest(Request):
    """AI Replace: paint `content` where the mask is white."""

    path: ClassVar[str] = "/v1/aiart/replacer"
    accepts_base64: ClassVar[bool] = True
    image: ImageRef
    mask: ImageRef
    content: str

    def __post_init__(self) -> None:
        require_image(self.image)
        require_image(self.mask, "mask")
        require_prompt(self.content, required=True)

    def payload(self) -> dict[str, Any]:
        return {"imageUrl": self.image, "maskImageUrl": self.mask, "content": self.content}


def parse(text: str) -> Args:
    """The whole text is what to paint."""
    return {"prompt": check_prompt(text, example="/replace a red umbrella")}


def build(args: Args, images: Sequence[InputImage]) -> ReplaceRequest:
    """The request: the photo first, the mask second."""
    return ReplaceRequest(image=images[0].ref, mask=images[1].ref, content=args["prompt"])


def entry(styles: object) -> Operation:
    """The catalogue entry; not on the photo menu, since it needs a mask as well."""
    return Operation(
        name="replace", title=N_("Replace"), summary=N_("Paint something where a mask is white"),
        usage=N_("/replace <what to paint>"), images=2, request_type=ReplaceRequest, parser=parse, builder=build,
        describe=lambda args: lazy(N_("Replace: {prompt}"), prompt=args["prompt"][:300]),
        limits=changed(DEFAULT_LIMITS, max_side=2048), menu=(), image_names=(N_("photo"), N_("mask")),
        mini_app="paint", typical_seconds=15, noun=N_("Replacement"), cli=(option("--prompt", required=True),))
