"""What the worker needs from the chat side, as a protocol that `bot.tg` implements."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bot.i18n import Text
from bot.operations.catalogue import Operation
from bot.store import JobRecord
from bot.videos import VideoInfo


class FailureKind(enum.StrEnum):
    """Why a job ended without a result, in terms a user can act on."""

    BAD_INPUT = "bad_input"            # the image or arguments cannot be used
    REJECTED = "rejected"              # the service refused the request (HTTP 400)
    CONTENT = "content"                # the service rejected the content (NSFW)
    SERVICE_FAILED = "service_failed"  # the task ended in failure
    NO_CREDITS = "no_credits"          # the operator's account is out of tokens
    UNAVAILABLE = "unavailable"        # the service could not be reached or refused our key
    EXPIRED = "expired"                # the job passed its deadline
    DELIVERY = "delivery"              # the result could not be fetched or sent


@dataclass(frozen=True)
class Failure:
    """A failure to tell the user about; `detail` is safe to show (a `Text` is shown in the user's language)."""

    kind: FailureKind
    detail: str | Text | None = None


@dataclass(frozen=True)
class ResultFile:
    """One result, downloaded: an image's bytes, or a video kept in a file (`path`) with what sendVideo needs.

    A video too large to upload has neither bytes nor a file: it goes out as a link to `source_url`.
    """

    data: bytes
    file_name: str
    mime: str
    path: Path | None = None
    video: VideoInfo | None = None
    size: int = 0
    #: where the service serves the result (a video too large to upload is linked there)
    source_url: str | None = None

    @property
    def too_large(self) -> bool:
        """A video that is not uploaded (above Telegram's limit): it goes out as a link."""
        return self.video is None and self.mime.startswith("video/")


@dataclass(frozen=True)
class Delivered:
    """What a delivery left in the chat: the sent message ids, and the files as Telegram keeps them."""

    message_ids: list[int]
    #: {"id": Telegram file id, "kind": "photo", "document" or "video"} per result, for follow-ups and resending;
    #: a video's also has "thumb", its thumbnail's file id, when Telegram made one
    files: list[dict[str, str]]


class InputUnavailable(Exception):
    """An input file could not be fetched; `permanent` says whether trying again can help."""

    def __init__(self, reason: str | Text, *, permanent: bool) -> None:
        super().__init__(str(reason))
        self.reason = str(reason)
        #: the reason to show the user, in their language
        self.text = reason if isinstance(reason, Text) else None
        self.permanent = permanent


class DeliveryError(Exception):
    """Sending to the chat failed; `retry_after` is set when trying again later can help."""

    def __init__(self, reason: str, *, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class Notifier(Protocol):
    """The chat side of a job: fetch its inputs, deliver its results, report its failure."""

    async def fetch_input(self, file_id: str) -> bytes:
        """The bytes of an input file; raises InputUnavailable."""

    async def deliver(self, job: JobRecord, operation: Operation, results: Sequence[ResultFile]) -> Delivered:
        """Send the results replying to the user's message; returns what was sent; raises DeliveryError."""

    async def report_failure(self, job: JobRecord, operation: Operation | None, failure: Failure) -> None:
        """Tell the user the job failed and what to try; raises DeliveryError."""

    async def show_progress(self, job: JobRecord, operation: Operation, elapsed: int) -> bool:
        """Edit a slow job's status message to say it has run `elapsed` seconds; whether it was edited."""
