"""What a renderer module gives the sandbox: its endpoint, body parser and renderer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PIL import Image

from bot.sandbox.effects import Rendering, encode_jpeg
from bot.sandbox.payloads import TaskSpec

__all__ = ["Images", "Params", "Rendering", "SandboxOperation", "single"]

Params = dict[str, Any]
Images = dict[str, Image.Image]


@dataclass(frozen=True)
class SandboxOperation:
    """One endpoint of the service: its path (aiohttp's route syntax), body parser and renderer."""

    name: str
    path: str
    parse: Callable[..., TaskSpec]  # (body, **path parameters) -> TaskSpec
    render: Callable[[Params, Images, dict[str, bytes]], Rendering]


def single(image: Image.Image) -> Rendering:
    """A rendering of one JPEG image."""
    return Rendering((encode_jpeg(image),))
