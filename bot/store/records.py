"""Plain data the store hands out and takes in: job states, new jobs and job records."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any


class JobState(enum.StrEnum):
    """Where a job is in its life; the last four are final."""

    QUEUED = "queued"  # waiting to be submitted
    SUBMITTING = "submitting"  # a worker is creating the service task (POST in flight)
    RUNNING = "running"  # service task exists; polling
    COMPLETED = "completed"  # result URLs known; waiting for delivery
    DELIVERED = "delivered"  # final
    FAILED = "failed"  # final
    EXPIRED = "expired"  # final (deadline passed)
    CANCELLED = "cancelled"  # final


FINAL_STATES: frozenset[JobState] = frozenset(
    {JobState.DELIVERED, JobState.FAILED, JobState.EXPIRED, JobState.CANCELLED}
)
ACTIVE_STATES: frozenset[JobState] = frozenset(JobState) - FINAL_STATES


@dataclass(frozen=True)
class NewJob:
    """What a handler knows when it queues a job."""

    chat_id: int
    user_id: int | None
    reply_to_message_id: int | None
    operation: str
    args: dict[str, Any]
    inputs: list[str]  # Telegram file ids
    deadline_at: datetime
    chat_type: str = "private"
    status_message_id: int | None = None
    language: str = "en"
    #: credits reserved for it (bot.credits)
    credits: int = 0
    #: the inline message (inline mode) the result goes to instead of the chat
    inline_message_id: str | None = None


@dataclass(frozen=True)
class JobRecord:
    """One job row as plain data; datetimes are timezone-aware UTC."""

    id: int
    chat_id: int
    user_id: int | None
    chat_type: str
    reply_to_message_id: int | None
    status_message_id: int | None
    operation: str
    args: dict[str, Any]
    inputs: list[str]
    task_id: str | None
    state: JobState
    attempts: int
    next_check_at: datetime
    deadline_at: datetime
    lease_owner: str | None
    lease_until: datetime | None
    result_urls: list[str]
    error: str | None
    sent_message_ids: list[int]
    created_at: datetime
    updated_at: datetime
    submitted_at: datetime | None
    finished_at: datetime | None
    #: pixels of the largest input image as submitted, for the poll schedule (None: no input, or older rows)
    input_pixels: int | None = None
    #: refused in the chat (bad arguments or input) and never queued; kept as a failed job for the record
    refused: bool = False
    #: the kind of failure once one is decided (a FailureKind value of the worker); `error` holds the reason
    failure_kind: str | None = None
    #: the language its results and notices are written in (bot.i18n.LANGUAGES)
    language: str = "en"
    #: the Telegram files the result was delivered as ({"id": file id, "kind": "photo" or "document"}), in order
    result_files: list[dict[str, str]] = field(default_factory=list)
    #: the status text last shown for the job (None: the one it was queued with)
    progress: str | None = None
    #: credits reserved for it when queued: charged on delivery, given back when it fails, expires or is cancelled
    credits: int = 0
    #: the inline message (inline mode) that shows the job and is edited into its result; None: a chat job
    inline_message_id: str | None = None
    #: when the service's callback for its task arrived (None: none came yet)
    callback_at: datetime | None = None
    #: what the task cost at the service in its tokens (`creditsIncrement`; None: not reported)
    service_cost: int | None = None

    @property
    def is_final(self) -> bool:
        """True once the job can no longer change state."""
        return self.state in FINAL_STATES

    @property
    def failure_untold(self) -> bool:
        """True when the job's failure is decided but its user is not told yet (telling is its next step)."""
        return self.failure_kind is not None and not self.is_final


JOB_RECORD_FIELDS: frozenset[str] = frozenset(field.name for field in fields(JobRecord))


@dataclass(frozen=True)
class Preferences:
    """A user's or a chat's preferences: a chosen language (None: not chosen) and other settings by name."""

    language: str | None = None
    settings: dict[str, Any] = field(default_factory=dict)
