"""Typed requests and answers of the image service: the base of every request, tasks, credits, upload slots.

Every request is a frozen dataclass that checks its values when built (so an out-of-range value never
reaches the service) and knows its endpoint path and JSON payload; each operation's own request lives in
its module (`bot.operations.<name>`). An image is an `ImageRef`: an https URL the service can fetch, or
BASE64-encoded image data.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

ImageRef = str


def require(condition: bool, message: str) -> None:
    """Refuse a value the service would refuse: a ValueError with the message."""
    if not condition:
        raise ValueError(message)


def require_image(value: ImageRef, name: str = "image") -> None:
    """Refuse an empty image reference."""
    require(isinstance(value, str) and bool(value), f"{name} must be a non-empty URL or BASE64 string")


MAX_PROMPT_CHARS = 1000


def require_prompt(value: str, *, required: bool, name: str = "prompt") -> None:
    """Refuse a prompt longer than the service takes, or an empty one where it is required."""
    if required:
        require(bool(value and value.strip()), f"{name} must not be empty")
    require(len(value) <= MAX_PROMPT_CHARS, f"{name} must be at most {MAX_PROMPT_CHARS} characters")


@dataclass(frozen=True)
class Request(abc.ABC):
    """Base of all task-creating requests."""

    path: ClassVar[str]
    #: whether the service accepts BASE64 data for this operation's image fields
    accepts_base64: ClassVar[bool] = False
    #: the upload slot's `type` for this operation's images: what the provider's own client sends
    #: (`img_upscale`, `bg_remove`, `img2img`); operations that client does not upload for use `img2img`
    upload_type: ClassVar[str] = "img2img"

    @property
    def endpoint(self) -> str:
        """The path to POST to."""
        return self.path

    @abc.abstractmethod
    def payload(self) -> dict[str, Any]:
        """The JSON body."""


class TaskState(enum.StrEnum):
    """What a task's status means to a client."""

    RUNNING = "running"      # status 0
    COMPLETED = "completed"  # status 1: results valid
    FAILED = "failed"        # status 2
    UNKNOWN = "unknown"      # any other value: treated as still running until the deadline


@dataclass(frozen=True)
class Task:
    """One task as the task query reports it."""

    task_id: str
    state: TaskState
    raw_status: int | None
    result_urls: tuple[str, ...] = ()
    reason: str | None = None
    nsfw: bool = False
    type: str | None = None
    created_ms: int | None = None
    updated_ms: int | None = None
    #: what the task cost in service tokens (`creditsIncrement`, undocumented; read by the provider's client)
    credits_increment: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in (TaskState.COMPLETED, TaskState.FAILED)


@dataclass(frozen=True)
class Credits:
    """The account's token balance."""

    total: int
    remaining: int
    business_id: str | None = None


@dataclass(frozen=True)
class UploadSlot:
    """Where to PUT image bytes, and the URL the service then knows them by."""

    upload_url: str
    url: str = field(repr=False)
