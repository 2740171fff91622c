"""Expand: a photo extended beyond its edges by some padding on each side."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from bot.aiart.models import ImageRef, Request, require, require_image
from bot.i18n import N_, Text, lazy
from bot.images import DEFAULT_LIMITS
from bot.operations.catalogue import Args, ArgumentError, Operation, option

MAX_PADDING = 2048
#: the presets: (label, width part, height part) of the aspect ratios offered
_RATIOS = ((N_("Square"), 1, 1), ("4:3", 4, 3), ("16:9", 16, 9), ("9:16", 9, 16))
#: the "margin on every side" preset, as a share of the longer side
_MARGIN_SHARE = 0.1
#: the longest side the worker hands the service
_MAX_SIDE = 2048


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
        require_image(self.image)
        sides = (self.left, self.top, self.right, self.bottom)
        require(all(0 <= side <= MAX_PADDING for side in sides), f"padding must be between 0 and {MAX_PADDING}")
        require(any(sides), "at least one side needs padding")

    def payload(self) -> dict[str, Any]:
        return {"imageUrl": self.image, "padImgLeft": self.left, "padImgTop": self.top,
                "padImgRight": self.right, "padImgBottom": self.bottom}


def parse(text: str) -> Args:
    """Four paddings (left, top, right, bottom) or one for every side."""
    parts = text.replace(",", " ").split()
    if len(parts) not in (1, 4) or not all(re.fullmatch(r"\d{1,6}", part) for part in parts):
        raise ArgumentError(N_("Give the padding in pixels: four numbers (left, top, right, bottom) or one for "
                               "every side, for example /expand 100 0 100 0."))
    sides = [int(part) for part in parts] * (4 if len(parts) == 1 else 1)
    if any(side > MAX_PADDING for side in sides):
        raise ArgumentError(N_("Padding can be at most {most} pixels a side."), most=MAX_PADDING)
    if not any(sides):
        raise ArgumentError(N_("At least one side needs some padding, for example /expand 100 0 100 0."))
    return dict(zip(("left", "top", "right", "bottom"), sides, strict=True))


def presets(max_side: int) -> Callable[[int, int], list[tuple[Text, str]]]:
    """Paddings that make a photo square, 4:3, 16:9 or 9:16, or give it a margin, within the limits."""

    def offer(width: int, height: int) -> list[tuple[Text, str]]:
        # the size the worker hands the service: the photo fitted into the operation's longest side
        if max(width, height) > max_side:
            scale = max_side / max(width, height)
            width, height = max(1, round(width * scale)), max(1, round(height * scale))
        offered: list[tuple[Text, tuple[int, ...]]] = []
        for label, a, b in _RATIOS:
            if width * b < height * a:
                extra = round(height * a / b) - width
                padding: tuple[int, ...] = (extra // 2, 0, extra - extra // 2, 0)
            else:
                extra = round(width * b / a) - height
                padding = (0, extra // 2, 0, extra - extra // 2)
            offered.append((lazy(label), padding))
        margin = max(1, round(_MARGIN_SHARE * max(width, height)))
        offered.append((lazy(N_("Margin {pixels} px"), pixels=margin), (margin,) * 4))
        return [(label, " ".join(map(str, padding))) for label, padding in offered
                if any(padding) and max(padding) <= MAX_PADDING]

    return offer


def entry(styles: object) -> Operation:
    """The catalogue entry."""
    return Operation(
        name="expand", title=N_("Expand"), summary=N_("Extend a photo beyond its edges"),
        usage=N_("/expand <left> <top> <right> <bottom>"), images=1, request_type=ExpandRequest, parser=parse,
        describe=lambda args: lazy(N_("Expanded by {left}/{top}/{right}/{bottom} px"), **args),
        limits=replace(DEFAULT_LIMITS, max_side=_MAX_SIDE), mini_app="frame", typical_seconds=12, presets=presets(_MAX_SIDE),
        noun=N_("Expansion"),
        cli=(option("--pad", nargs=4, type=int, metavar=("LEFT", "TOP", "RIGHT", "BOTTOM"), required=True),))
