"""What chat handlers ask of the job system: queue a job, list a chat's jobs, cancel them, check quotas.

Quotas are per user: jobs in progress at once, and jobs queued in the last 24 hours (refused requests
are kept as failed rows but do not count). Within one process the check and the store cannot race;
across replicas two messages in the same instant can still both pass, overshooting by at most one
job per replica.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.store import ChatRepository, JobRecord, JobRepository, JobState, NewJob, UserRepository
from bot.store.repositories import REFUSED_PREFIX

#: how long a passed quota check holds a place for the job its handler is about to store; a handler
#: that never stores it (it crashed) frees the place after this
GRANT_TTL = timedelta(seconds=60)
#: a chat's or user's record ("last seen", names) is rewritten at most this often while it stays the same:
#: a busy chat would otherwise cost two extra writes with every job
SEEN_REFRESH = timedelta(minutes=5)
#: how many chats and users the refresh memory holds before it starts afresh
SEEN_MEMORY = 10_000


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
        # check_quota and enqueue are two calls, and updates are handled concurrently: a passed check
        # holds a place until its job is stored, so a burst of messages cannot all pass one check
        self._quota_lock = asyncio.Lock()
        self._grants: dict[int, list[datetime]] = {}
        #: ("chat" or "user", id) -> (the details last written, when)
        self._written: dict[tuple[str, int], tuple[tuple[object, ...], datetime]] = {}

    def _new_job(self, request: JobRequest, now: datetime) -> NewJob:
        return NewJob(chat_id=request.chat_id, user_id=request.user_id,
                      reply_to_message_id=request.reply_to_message_id, operation=request.operation,
                      args=request.args, inputs=request.inputs, deadline_at=now + self._deadline,
                      chat_type=request.chat_type, status_message_id=request.status_message_id)

    async def check_quota(self, user_id: int | None) -> QuotaExceeded | None:
        """None when the user may queue another job (its place is held until enqueue); else what stops them."""
        if user_id is None:
            return None
        async with self._quota_lock:
            now = self._clock()
            exceeded = await self._exceeded(user_id, now, self._live_grants(user_id, now))
            if exceeded is None:
                self._grants.setdefault(user_id, []).append(now)
            return exceeded

    async def _exceeded(self, user_id: int, now: datetime, granted: int) -> QuotaExceeded | None:
        day_ago = now - timedelta(days=1)
        async with self._sessions() as session:
            jobs = JobRepository(session)
            max_active, max_per_day = self._quotas.max_active, self._quotas.max_per_day
            if max_active <= 0 and max_per_day <= 0:
                return None
            active, today = await jobs.quota_usage(user_id, day_ago)
            if max_active > 0 and active + granted >= max_active:
                return QuotaExceeded(f"You already have {max_active} jobs in progress. "
                                     "Wait for one to finish, or /cancel them.")
            if max_per_day > 0 and today + granted >= max_per_day:
                oldest = await jobs.oldest_created_since(user_id, day_ago)
                return QuotaExceeded(f"You have used your {max_per_day} jobs for today.",
                                     (oldest or now) + timedelta(days=1))
        return None

    def _live_grants(self, user_id: int, now: datetime) -> int:
        """How many quota checks of this user passed and still wait for their job to be stored."""
        live = [granted for granted in self._grants.get(user_id, []) if now - granted < GRANT_TTL]
        if live:
            self._grants[user_id] = live
        else:
            self._grants.pop(user_id, None)
        return len(live)

    def _stale(self, key: tuple[str, int], details: tuple[object, ...], now: datetime) -> bool:
        """Whether a chat's or user's record needs writing: new details, or not written for a while."""
        written = self._written.get(key)
        return written is None or written[0] != details or now - written[1] >= SEEN_REFRESH

    def _remember_written(self, key: tuple[str, int], details: tuple[object, ...], now: datetime) -> None:
        if len(self._written) >= SEEN_MEMORY:
            self._written.clear()  # forgetting only costs a write per chat and user
        self._written[key] = (details, now)

    def _use_grant(self, user_id: int | None) -> None:
        grants = self._grants.get(user_id) if user_id is not None else None
        if grants:
            grants.pop(0)

    async def enqueue(self, request: JobRequest) -> JobRecord:
        """Store a new job (durably, before anything else happens) and wake the worker."""
        # under the quota lock, so the stored job and its grant are never both counted
        async with self._quota_lock:
            try:
                now = self._clock()
                chat = ("chat", request.chat_id), (request.chat_type, request.chat_title)
                user = ("user", request.user_id or 0), (request.username, request.first_name)
                touch_chat, touch_user = self._stale(*chat, now), request.user_id is not None and self._stale(*user, now)
                async with self._sessions() as session, session.begin():
                    if touch_chat:
                        await ChatRepository(session).touch(request.chat_id, type=request.chat_type,
                                                            title=request.chat_title, now=now)
                    if touch_user and request.user_id is not None:
                        await UserRepository(session).touch(request.user_id, username=request.username,
                                                            first_name=request.first_name, now=now)
                    job = await JobRepository(session).add(self._new_job(request, now), now=now)
                for (key, details), touched in ((chat, touch_chat), (user, touch_user)):
                    if touched:
                        self._remember_written(key, details, now)
            finally:
                self._use_grant(request.user_id)
        if self._on_enqueued is not None:
            self._on_enqueued()
        return job

    async def record_refused(self, request: JobRequest, reason: str) -> JobRecord | None:
        """Keep a refused request (bad arguments or input) as a failed job, for the record."""
        now = self._clock()
        async with self._sessions() as session, session.begin():
            jobs = JobRepository(session)
            job = await jobs.add(self._new_job(request, now), now=now)
            return await jobs.update(job.id, owner=None, state=JobState.FAILED,
                                     error=f"{REFUSED_PREFIX} {reason}"[:1000], finished_at=now)

    async def active(self, chat_id: int) -> list[JobRecord]:
        """The chat's unfinished jobs, oldest first."""
        async with self._sessions() as session:
            return await JobRepository(session).active_for_chat(chat_id)

    async def cancel(self, chat_id: int) -> list[JobRecord]:
        """Cancel every unfinished job of the chat; their results will not be sent."""
        async with self._sessions() as session, session.begin():
            return await JobRepository(session).cancel_chat(chat_id, now=self._clock())
