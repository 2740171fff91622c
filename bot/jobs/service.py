"""What chat handlers ask of the job system: queue a job, list a chat's jobs, cancel them, check quotas.

Quotas are per user: jobs in progress at once (and, without credits, jobs queued in the last 24 hours;
refused requests are kept as failed rows but do not count). With credits (bot.credits), a job's price
is reserved in the transaction that stores it, with the user's accounts locked, so credits are never
overspent; cancelling gives the reservations back in the transaction that cancels. The quota check and
the store are one transaction: on SQLite (one writer at a time) they cannot race at all; on PostgreSQL
replicas handling two messages in the same instant can both pass the concurrent-jobs limit,
overshooting by at most one job per replica.

A job made while an update is being handled (bot.store.inbox.HANDLING_UPDATE) marks that update
handled in the transaction that stores the job: both are committed, or neither is, so an update
Telegram sends again after a crash makes no second job (`made_from_update`); and when two handlings
of one update run at once, the second one's job is refused (bot.store.inbox.UpdateHandledElsewhere).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.chats import stored_inputs
from bot.clock import utcnow
from bot.credits import CreditPolicy, Plan, Shortfall, ledger
from bot.i18n import Text, nlazy
from bot.jobs.notifier import FailureKind
from bot.metrics import Metrics
from bot.store import ChatRepository, JobRecord, JobRepository, JobState, NewJob, UserRepository
from bot.store.db import Sessions, reading
from bot.store.inbox import HANDLING_UPDATE, InboxRepository

#: a chat's or user's record ("last seen", names) is rewritten at most this often while it stays the same:
#: a busy chat would otherwise cost two extra writes with every job
SEEN_REFRESH = timedelta(minutes=5)
#: how many chats and users the refresh memory holds before it starts afresh
SEEN_MEMORY = 10_000


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
    #: the requester's language (bot.i18n), for the job's results and notices
    language: str = "en"
    #: the inline message (inline mode) that shows the job and gets its result, instead of the chat
    inline_message_id: str | None = None
    #: bytes some of `inputs` name (bot.chats.stored_inputs): (reference, bytes), written with the job or not at all
    stored: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True)
class QuotaExceeded:
    """Why a user cannot queue another job now, and when they can."""

    reason: Text
    retry_at: datetime | None = None


@dataclass(frozen=True)
class NotEnoughCredits:
    """A job costs more credits than the user can spend now."""

    price: int
    available: int
    free_per_day: int
    #: the job is on behalf of a chat, which only a group's pool may pay for
    pool_only: bool = False
    #: the whole bot's free credits for today are given out (FREE_CREDITS_DAILY_BUDGET)
    free_gone: bool = False


@dataclass(frozen=True)
class Quotas:
    """Per-user limits (0 or less disables a limit)."""

    max_active: int = 3
    max_per_day: int = 50


class JobService:
    """Queues and inspects jobs for the chat side; the worker does the rest."""

    def __init__(self, sessions: Sessions, *, deadline: timedelta,
                 quotas: Quotas = Quotas(), credits: CreditPolicy | None = None,
                 on_enqueued: Callable[[], None] | None = None,
                 on_free_budget_spent: Callable[[], None] | None = None,
                 clock: Callable[[], datetime] = utcnow, metrics: Metrics | None = None,
                 deadlines: Mapping[str, timedelta] | None = None) -> None:
        self._sessions = sessions
        self._metrics = metrics
        self._deadline = deadline
        #: operations that take longer than the operator's deadline allows (videos): their own, by name
        self._deadlines = dict(deadlines or {})
        self._quotas = quotas
        self._credits = credits
        self._on_enqueued = on_enqueued
        #: called once a day, by the replica whose job took the last free credit of the day's budget
        self._on_free_budget_spent = on_free_budget_spent
        self._clock = clock
        # updates are handled concurrently: within this process, one check-and-store at a time
        self._quota_lock = asyncio.Lock()
        #: ("chat" or "user", id) -> (the details last written, when)
        self._written: dict[tuple[str, int], tuple[tuple[object, ...], datetime]] = {}
        #: (user, day) whose free allowance this process saw committed: a day's is written once, for good
        self._allowances: set[tuple[int, date]] = set()

    def _new_job(self, request: JobRequest, now: datetime, credits: int = 0) -> NewJob:
        return NewJob(credits=credits, chat_id=request.chat_id, user_id=request.user_id,
                      reply_to_message_id=request.reply_to_message_id, operation=request.operation,
                      args=request.args, inputs=request.inputs,
                      deadline_at=now + max(self._deadline, self._deadlines.get(request.operation, self._deadline)),
                      chat_type=request.chat_type, status_message_id=request.status_message_id,
                      language=request.language, inline_message_id=request.inline_message_id)

    async def _exceeded(self, jobs: JobRepository, user_id: int | None, now: datetime) -> QuotaExceeded | None:
        """What stops the user from queueing another job now, if anything."""
        max_active, max_per_day = self._quotas.max_active, self._quotas.max_per_day
        if user_id is None or (max_active <= 0 and max_per_day <= 0):
            return None
        day_ago = now - timedelta(days=1)
        active, today = await jobs.quota_usage(user_id, day_ago)
        if max_active > 0 and active >= max_active:
            return QuotaExceeded(nlazy("You already have {count} job in progress. Wait for it to finish, or /cancel it.",
                                       "You already have {count} jobs in progress. Wait for one to finish, or "
                                       "/cancel them.", max_active))
        if max_per_day > 0 and today >= max_per_day:
            oldest = await jobs.oldest_created_since(user_id, day_ago)
            return QuotaExceeded(nlazy("You have used your {count} job for today.",
                                       "You have used your {count} jobs for today.", max_per_day),
                                 (oldest or now) + timedelta(days=1))
        return None

    def _stale(self, key: tuple[str, int], details: tuple[object, ...], now: datetime) -> bool:
        """Whether a chat's or user's record needs writing: new details, or not written for a while."""
        written = self._written.get(key)
        return written is None or written[0] != details or now - written[1] >= SEEN_REFRESH

    def _remember_written(self, key: tuple[str, int], details: tuple[object, ...], now: datetime) -> None:
        if len(self._written) >= SEEN_MEMORY:
            self._written.clear()  # forgetting only costs a write per chat and user
        self._written[key] = (details, now)

    def _remember_allowance(self, allowance: tuple[int, date]) -> None:
        if len(self._allowances) >= SEEN_MEMORY:
            self._allowances.clear()  # forgetting only costs an insert attempt per user
        self._allowances.add(allowance)

    async def _store(self, session: AsyncConnection, request: JobRequest, now: datetime, credits: int,
                     spending: Plan | None, *, touch_chat: bool, touch_user: bool) -> JobRecord:
        """Write the job, its reservation, and the chat and user when their records are stale."""
        if touch_chat:
            await ChatRepository(session).touch(request.chat_id, type=request.chat_type, title=request.chat_title,
                                                now=now)
        if touch_user and request.user_id is not None:
            await UserRepository(session).touch(request.user_id, username=request.username,
                                                first_name=request.first_name, now=now)
        job = await JobRepository(session).add(self._new_job(request, now, credits), now=now)
        for reference, data in request.stored:
            await stored_inputs.write(session, reference, data, now=now)
        await _mark_handled(session, now)
        if spending is not None:
            await ledger.reserve(session, job.id, spending, now=now)
        return job

    def price(self, request: JobRequest) -> int:
        """What the job would cost in credits (0 with credits off, or for an anonymous sender)."""
        if self._credits is None or request.user_id is None:
            return 0
        return self._credits.price(request.operation, request.args)

    async def enqueue(self, request: JobRequest) -> JobRecord | QuotaExceeded | NotEnoughCredits:
        """Store a new job (durably, before anything else happens) and wake the worker; or say which quota stops it.

        The job's price is reserved in the same transaction that stores it (bot.credits.ledger).
        """
        async with self._quota_lock:
            now = self._clock()
            chat = ("chat", request.chat_id), (request.chat_type, request.chat_title)
            user = ("user", request.user_id or 0), (request.username, request.first_name)
            touch_chat, touch_user = self._stale(*chat, now), request.user_id is not None and self._stale(*user, now)
            async with self._sessions() as session, session.begin():
                jobs = JobRepository(session)
                exceeded = await self._exceeded(jobs, request.user_id, now)
                if exceeded is not None:
                    return exceeded
                price = self.price(request)
                spending = allowance = None
                if price > 0 and self._credits is not None and request.user_id is not None:
                    allowance = ledger.allowance_day(request.user_id, now)
                    spending = await ledger.plan(
                        session, user_id=request.user_id, price=price, now=now,
                        pool_chat_id=self._credits.pool_of(request.chat_id, request.chat_type),
                        free_per_day=self._credits.free_per_day, allowance_written=allowance in self._allowances,
                        budget=self._credits.free_budget, free_pays=self._credits.free_pays(request.operation))
                if isinstance(spending, Shortfall):
                    outcome: JobRecord | NotEnoughCredits = NotEnoughCredits(
                        spending.price, spending.available, spending.free_per_day, spending.pool_only,
                        spending.free_gone)
                else:
                    outcome = await self._store(session, request, now, price if spending else 0, spending,
                                                touch_chat=touch_chat, touch_user=touch_user)
            # committed: the allowance is written for good, the chat and user are up to date
            if allowance is not None:
                self._remember_allowance(allowance)
            if spending is not None and spending.budget_reached and self._on_free_budget_spent is not None:
                self._on_free_budget_spent()
            if isinstance(outcome, NotEnoughCredits):
                return outcome
            job = outcome
            for (key, details), touched in ((chat, touch_chat), (user, touch_user)):
                if touched:
                    self._remember_written(key, details, now)
        if self._metrics is not None:
            self._metrics.jobs_created.labels(job.operation).inc()
        if self._on_enqueued is not None:
            self._on_enqueued()
        return job

    async def refusal(self, request: JobRequest) -> QuotaExceeded | NotEnoughCredits | None:
        """What would stop this job now (limits, then credits), read without locking or writing: a cheap refusal
        before costly work. `enqueue` decides again when it stores, so a race costs a later refusal, not credits."""
        now = self._clock()
        async with reading(self._sessions) as session:
            exceeded = await self._exceeded(JobRepository(session), request.user_id, now)
            if exceeded is not None:
                return exceeded
            price = self.price(request)
            if price <= 0 or self._credits is None or request.user_id is None:
                return None
            pool = self._credits.pool_of(request.chat_id, request.chat_type)
            held = await ledger.balance(session, user_id=request.user_id, pool_chat_id=pool, now=now,
                                        free_per_day=self._credits.free_per_day)
        free = held.free_left if self._credits.free_pays(request.operation) else 0
        available = held.credits + free + (held.pool_left or 0)
        if available >= price:
            return None
        return NotEnoughCredits(price, available, held.free_per_day, ledger.is_chat_identity(request.user_id))

    async def queued_ahead(self, job_id: int) -> int:
        """How many jobs queued before this one still wait to be submitted (its place in the queue)."""
        async with reading(self._sessions) as session:
            return await JobRepository(session).queued_ahead(job_id)

    async def attach_status_message(self, job_id: int, message_id: int) -> bool:
        """Give a stored job the status message sent for it; False when the job has ended meanwhile."""
        async with self._sessions() as session, session.begin():
            return await JobRepository(session).attach_status_message(job_id, message_id, now=self._clock())

    async def record_refused(self, request: JobRequest, reason: str) -> JobRecord | None:
        """Keep a refused request (bad arguments or input) as a failed job, for the record."""
        now = self._clock()
        async with self._sessions() as session, session.begin():
            jobs = JobRepository(session)
            job = await jobs.add(self._new_job(request, now), now=now)
            await _mark_handled(session, now)
            return await jobs.update(job.id, owner=None, state=JobState.FAILED, refused=True,
                                     failure_kind=FailureKind.BAD_INPUT.value, error=reason[:1000], finished_at=now)

    async def made_from_update(self, update_id: int) -> bool:
        """Whether this Telegram update made a job (in any state, refused ones too)."""
        async with reading(self._sessions) as session:
            return await InboxRepository(session).handled(update_id)

    async def forget_updates(self, keep_for: timedelta) -> int:
        """Forget handled updates older than `keep_for` (Telegram stops sending an update long before)."""
        async with self._sessions() as session, session.begin():
            return await InboxRepository(session).forget(before=self._clock() - keep_for)

    async def active(self, chat_id: int, *, user_id: int | None) -> list[JobRecord]:
        """The chat's unfinished jobs of one user (everyone's when `user_id` is None), oldest first."""
        async with reading(self._sessions) as session:
            return await JobRepository(session).active_for_chat(chat_id, user_id=user_id)

    async def cancel(self, chat_id: int, *, user_id: int | None) -> list[JobRecord]:
        """Cancel the chat's unfinished jobs of one user (everyone's when `user_id` is None); no results are sent."""
        now = self._clock()
        async with self._sessions() as session, session.begin():
            cancelled = await JobRepository(session).cancel_chat(chat_id, user_id=user_id, now=now)
            await ledger.settle(session, cancelled, now=now)  # their reservations come back with the cancelling
        if self._metrics is not None:
            for job in cancelled:
                self._metrics.jobs_finished.labels(job.operation, JobState.CANCELLED.value).inc()
        return cancelled


async def _mark_handled(session: AsyncConnection, now: datetime) -> None:
    """Mark the update being handled (if any) as having made a job, in the job's own transaction."""
    handling = HANDLING_UPDATE.get()
    if handling is not None:
        await InboxRepository(session).mark_handled(handling, now=now)
