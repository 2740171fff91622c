"""Remove background: the subject cut out as a transparent PNG."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require, require_image
from bot.i18n import N_, Text, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, ArgumentError, InputImage, Operation, ResultKind, option

#: the service's actions for the words a user may type
_ACTIONS = {"auto": "auto", "body": "SegmentBody", "person": "SegmentBody",
            "object": "SegmentCommonImage", "thing": "SegmentCommonImage"}


@dataclass(frozen=True)
class RemoveBackgroundRequest(Request):
    """Background Remover: an RGBA image of the same size."""

    path: ClassVar[str] = "/v1/aiart/backgroundremover"
    accepts_base64: ClassVar[bool] = True
    upload_type: ClassVar[str] = "bg_remove"
    actions: ClassVar[tuple[str, ...]] = ("auto", "SegmentBody", "SegmentCommonImage")
    image: ImageRef
    action: str = "auto"

    def __post_init__(self) -> None:
        require_image(self.image)
        require(self.action in self.actions, f"action must be one of {', '.join(self.actions)}")

    def payload(self) -> dict[str, Any]:
        return {"userImageUrl": self.image, "action": self.action}


def parse(text: str) -> Args:
    """What to keep: auto (the default), body or object."""
    word = text.strip().lower()
    if not word:
        return {"mode": "auto"}
    if word not in _ACTIONS:
        raise ArgumentError(N_("Choose auto, body or object, for example /removebg body"))
    return {"mode": word}


def build(args: Args, images: Sequence[InputImage]) -> RemoveBackgroundRequest:
    """The request with the service's action for the word typed."""
    return RemoveBackgroundRequest(image=images[0].ref, action=_ACTIONS[args["mode"]])


def describe(args: Args) -> Text:
    """The caption: the mode, when one was chosen."""
    if args["mode"] == "auto":
        return lazy(N_("Background removed"))
    return lazy(N_("Background removed ({mode})"), mode=args["mode"])


def entry(styles: object) -> Operation:
    """The catalogue entry."""
    return Operation(
        name="removebg", title=N_("Remove background"), summary=N_("Cut out the subject (transparent PNG)"),
        usage=N_("/removebg [auto|body|object]"), images=1, request_type=RemoveBackgroundRequest, parser=parse,
        builder=build, describe=describe, limits=replace(DEFAULT_LIMITS, max_side=4096),
        result=ResultKind.PNG_DOCUMENT, typical_seconds=6, noun=N_("Background removal"),
        cli=(option("--mode", choices=("auto", "body", "object"), default="auto"),))
