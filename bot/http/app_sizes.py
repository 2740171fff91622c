"""Picture sizes the Mini App works at: what the service will get, and the copies sent to the phone."""

from __future__ import annotations

#: longest side of each copy: a third of a 360 px screen at 3× density, and the screen's width at 3×
SIDES = {"thumb": 320, "display": 1080}


def fitted(size: tuple[int, int], max_side: int | None) -> tuple[int, int]:
    """`size` scaled down so its longest side is at most `max_side`, as the worker fits an input (bot.images)."""
    width, height = size
    if max_side is None or max(size) <= max_side:
        return size
    scale = max_side / max(size)
    return max(1, round(width * scale)), max(1, round(height * scale))
