"""What chat handlers ask of the job system: queue a job, list a chat's jobs, cancel them, check quotas."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.store import ChatRepository, JobRecord, JobRepository, JobState, NewJob, UserRepository


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class JobRequest:
    """A job as a handler describes it."""

    chat_id: int
    chat_type: str
    chat_title: str | None
    user_id: int | None
    username: str | None
    first_name: str | None
    reply_to_message_id: int | None
    operation: str
    args: dict[str, Any]
    inputs: list[str]
    status_message_id: int | None = None


@dataclass(frozen=True)
class QuotaExceeded:
    """Why a user cannot queue another job now, and when they can."""

    reason: str
    retry_at: datetime | None = None


@dataclass(frozen=True)
class Quotas:
    """Per-user limits (0 or less disables a limit)."""

    max_active: int = 3
    max_per_day: int = 50


class JobService:
    """Queues and inspects jobs for the chat side; the worker does the rest."""

    def __init__(self, sessions: async_sessionmaker[AsyncSession], *, deadline: timedelta,
                 quotas: Quotas = Quotas(), on_enqueued: Callable[[], None] | None = None,
                 clock: Callable[[], datetime] = _utcnow) -> None:
        self._sessions = sessions
        self._deadline = deadline
        self._quotas = quotas
        self._on_enqueued = on_enqueued
        self._clock = clock

    def _new_job(self, request: JobRequest, now: datetime) -> NewJob:
        return NewJob(chat_id=request.chat_id, user_id=request.user_id,
                      reply_to_message_id=request.reply_to_message_id, operation=request.operation,
                      args=request.args, inputs=request.inputs, deadline_at=now + self._deadline,
                      chat_type=request.chat_type, status_message_id=request.status_message_id)

    async def check_quota(self, user_id: int | None) -> QuotaExceeded | None:
        """None when the user may queue another job; else what stops them."""
        if user_id is None:
            return None
        now = self._clock()
        day_ago = now - timedelta(days=1)
        async with self._sessions() as session:
            jobs = JobRepository(session)
            if self._quotas.max_active > 0 and await jobs.count_active_for_user(user_id) >= self._quotas.max_active:
                return QuotaExceeded(f"You already have {self._quotas.max_active} jobs in progress. "
                                     "Wait for one to finish, or /cancel them.")
            if self._quotas.max_per_day > 0:
                used = await jobs.count_created_since(user_id, day_ago)
                if used >= self._quotas.max_per_day:
                    oldest = await jobs.oldest_created_since(user_id, day_ago)
                    retry_at = (oldest or now) + timedelta(days=1)
                    return QuotaExceeded(f"You have used your {self._quotas.max_per_day} jobs for today.", retry_at)
        return None

    async def enqueue(self, request: JobRequest) -> JobRecord:
        """Store a new job (durably, before anything else happens) and wake the worker."""
        now = self._clock()
        async with self._sessions() as session, session.begin():
            await ChatRepository(session).touch(request.chat_id, type=request.chat_type,
                                                title=request.chat_title, now=now)
            if request.user_id is not None:
                await UserRepository(session).touch(request.user_id, username=request.username,
                                                    first_name=request.first_name, now=now)
            job = await JobRepository(session).add(self._new_job(request, now), now=now)
        if self._on_enqueued is not None:
            self._on_enqueued()
        return job

    async def record_refused(self, request: JobRequest, reason: str) -> JobRecord | None:
        """Keep a refused request (bad arguments or input) as a failed job, for the record."""
        now = self._clock()
        async with self._sessions() as session, session.begin():
            jobs = JobRepository(session)
            job = await jobs.add(self._new_job(request, now), now=now)
            return await jobs.update(job.id, owner=None, state=JobState.FAILED, error=f"refused: {reason}"[:1000],
                                     finished_at=now)

    async def active(self, chat_id: int) -> list[JobRecord]:
        """The chat's unfinished jobs, oldest first."""
        async with self._sessions() as session:
            return await JobRepository(session).active_for_chat(chat_id)

    async def cancel(self, chat_id: int) -> list[JobRecord]:
        """Cancel every unfinished job of the chat; their results will not be sent."""
        async with self._sessions() as session, session.begin():
            return await JobRepository(session).cancel_chat(chat_id, now=self._clock())
