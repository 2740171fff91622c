"""What each operation costs in credits per output image, from the operator's data file (CREDIT_PRICES_FILE).

The file is JSON: {"default": 1, "operations": {"headshot": 2, "generate": 3}}; either key may be left out.
Without a file every image costs 1 credit, as every output image costs the operator one service token.
A video costs per second, per model (the names of the "video" section of the style catalogue):
{"video_seconds": {"default": 2, "models": {"kling": 3}}}; without it, VIDEO_PER_SECOND credits a second.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.operations.catalogue import Operation, ResultKind

#: credits a second of video costs when the price file names none: a video task costs the operator far more
#: service tokens than a picture (the sandbox's figures are 6 to 14 a second)
VIDEO_PER_SECOND = 2


@dataclass(frozen=True)
class Prices:
    """Credits per output image, by operation name; per second of video, by model."""

    default: int = 1
    operations: Mapping[str, int] = field(default_factory=dict)
    video_default: int = VIDEO_PER_SECOND
    video_models: Mapping[str, int] = field(default_factory=dict)

    def per_second(self, model: str) -> int:
        """What one second of video of `model` costs."""
        return self.video_models.get(model, self.video_default)

    def per_image(self, operation: str) -> int:
        """What one output image of `operation` costs."""
        return self.operations.get(operation, self.default)

    def of(self, operation: Operation, args: Mapping[str, Any]) -> int:
        """What a job costs: the price per image times the images it makes; a video's seconds times its model's rate."""
        if operation.result is ResultKind.VIDEO:
            return self.per_second(str(args.get("model", ""))) * int(args.get("duration", 1))
        return self.per_image(operation.name) * max(1, operation.outputs(dict(args)))


def load_prices(path: Path | None) -> Prices:
    """The prices in `path` (None: 1 credit per image for everything); a bad file stops the bot at start-up."""
    if path is None:
        return Prices()
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object with 'default' and/or 'operations'")
    default = data.get("default", 1)
    operations = data.get("operations", {})
    if not isinstance(operations, dict):
        raise ValueError(f"{path}: 'operations' must map operation names to credits per image")
    video = data.get("video_seconds", {})
    if not isinstance(video, dict) or not isinstance(video.get("models", {}), dict):
        raise ValueError(f"{path}: 'video_seconds' must hold 'default' and/or 'models' (credits a second, by model)")
    video_default, models = video.get("default", VIDEO_PER_SECOND), video.get("models", {})
    for name, price in {"default": default, **operations, "video default": video_default,
                        **{f"video model {key}": value for key, value in models.items()}}.items():
        if not isinstance(price, int) or isinstance(price, bool) or price < 0:
            raise ValueError(f"{path}: the price of {name!r} must be a whole number of credits, 0 or more")
    return Prices(default, dict(operations), video_default, dict(models))
