"""The worker: submit queued jobs, poll running tasks, deliver results; every step a leased state change.

A job moves QUEUED → SUBMITTING → RUNNING → COMPLETED → DELIVERED, or ends FAILED, EXPIRED or
CANCELLED. Each step claims the job (a lease in the database), does its I/O, and writes the next
state only if it still holds the lease, so a crash anywhere resumes from the last written state and
two workers never act on one job. `tick()` runs one round and waits for it (tests use it);
`run()` keeps claiming as capacity frees up, so one slow call never holds up the others.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.aiart import AiartClient
from bot.aiart.client import RetryPolicy
from bot.aiart.errors import AiartError
from bot.aiart.models import TaskState
from bot.backoff import full_jitter
from bot.clock import utcnow
from bot.images import PreparationSlots, PreparedImage
from bot.jobs.alarm import ServiceAlarm
from bot.jobs.failures import (
    DELIVER_FAILURES,
    POLL_FAILURES,
    SUBMIT_FAILURES,
    FailureTable,
    GiveUp,
    Outcome,
    Retry,
    classify,
    failure_of,
    retry_after_of,
)
from bot.jobs.handoff import ImageHandoff
from bot.jobs.notifier import DeliveryError, Failure, FailureKind, Notifier, ResultFile
from bot.jobs.polling import PollSchedule, Schedule
from bot.jobs.results import ResultFetcher, discard
from bot.jobs.writes import JobWrites
from bot.leased import LeasedLoop
from bot.metrics import Metrics
from bot.operations.catalogue import InputImage, Operation, ResultKind
from bot.store import JobRecord, JobRepository, JobState
from bot.store.db import Sessions, reading
from bot.waiting import LendingSlots

log = logging.getLogger(__name__)


def service_outcome(error: BaseException | None) -> str:
    """A service call's outcome as a metric label: "ok", a kind of the client's error tree, or "other"."""
    if error is None:
        return "ok"
    return type(error).__name__ if isinstance(error, AiartError) else "other"


@dataclass(frozen=True)
class WorkerConfig:
    """Tuning of the worker; the defaults suit one process on a small machine."""

    owner: str
    service_concurrency: int = 5
    chat_concurrency: int = 8
    #: input images prepared at once, and their pixels together (see PreparationSlots)
    prepare_concurrency: int = 2
    prepare_pixels: int = 50_000_000
    batch: int = 64
    #: leases are renewed while a step runs, so they can be short: a job a dead worker held (one that
    #: does not come back under the same WORKER_ID to release it) is free again within this time
    submit_lease: timedelta = timedelta(seconds=60)
    poll_lease: timedelta = timedelta(seconds=60)
    deliver_lease: timedelta = timedelta(seconds=60)
    max_submit_attempts: int = 4
    #: after the deadline, delivery of a finished result is still tried this long
    delivery_grace: timedelta = timedelta(minutes=10)
    idle_sleep: float = 1.0
    #: on shutdown, in-flight steps get this long to finish before they are cancelled
    shutdown_grace: float = 15.0
    #: retries of one status check inside a poll (the poll itself is rescheduled after that)
    poll_retry: RetryPolicy = RetryPolicy(attempts=2, base_delay=0.5, max_delay=5.0)


#: what a user is told when every attempt at a job ended without an outcome
REPEATED_CRASH = "it failed every time I tried; please send another photo"

#: retries of a submission that cost nothing back off one step further for each this many seconds of job age
UNCOUNTED_BACKOFF_STEP_S = 30.0

#: a failed step's retries back off from this many seconds, doubling up to RETRY_CAP_S (full jitter)
RETRY_BASE_S = 2.0
RETRY_CAP_S = 60.0

#: a slow job's status message shows its elapsed time in steps of this many seconds (one edit a step at most)
PROGRESS_EVERY_S = 30.0

SUBMIT_STATES = (JobState.QUEUED, JobState.SUBMITTING)
POLL_STATES = (JobState.RUNNING,)
DELIVER_STATES = (JobState.COMPLETED,)


def pending_notice(job: JobRecord) -> Failure | None:
    """The failure a job still has to tell its user about, if any (its next step is to tell it)."""
    if not job.failure_untold or job.failure_kind is None:
        return None
    try:
        return Failure(FailureKind(job.failure_kind), job.error)
    except ValueError:  # written by another version of the bot
        return Failure(FailureKind.UNAVAILABLE)


def _classified(error: Exception, table: FailureTable) -> Outcome:
    """The outcome `table` gives `error`; an error it does not name is re-raised (a bug: logged by the step guard)."""
    outcome = classify(error, table)
    if outcome is None:
        raise error
    if isinstance(outcome, GiveUp) and outcome.log:
        log.error("%s (%r)", outcome.log, error)
    return outcome


def _reason(failure: Failure) -> str | None:
    """What `error` keeps of a failure: its reason in words, if it has one."""
    return str(failure.detail)[:1000] if failure.detail else None


@dataclass(frozen=True)
class _Claimed:
    """A job claimed for one step, under a lease of that step's length."""

    job: JobRecord
    step: Callable[[JobRecord], Awaitable[None]]
    lease: timedelta

    def __str__(self) -> str:
        return f"{self.job.id} ({self.step.__name__.strip('_')})"


class Worker:
    """Drives jobs through their states against the service and the chat."""

    def __init__(self, sessions: Sessions, client: AiartClient, notifier: Notifier,
                 operations: Mapping[str, Operation], *, handoff: ImageHandoff, fetcher: ResultFetcher,
                 config: WorkerConfig, schedule: Schedule | None = None,
                 clock: Callable[[], datetime] = utcnow, rng: random.Random | None = None,
                 metrics: Metrics | None = None, alarm: ServiceAlarm | None = None,
                 queued: asyncio.Event | None = None) -> None:
        self._sessions = sessions
        self._writes = JobWrites(sessions)
        self._client = client
        self._notifier = notifier
        self._operations = operations
        self._handoff = handoff
        self._fetcher = fetcher
        self.config = config
        self.schedule: Schedule = schedule or PollSchedule()
        self._clock = clock
        self._rng = rng or random.Random()
        self._service_slots = asyncio.Semaphore(config.service_concurrency)
        self._chat_slots = LendingSlots(config.chat_concurrency)
        #: decodes input images in threads within a pixel budget; the Mini App's masks share it
        self.preparation = PreparationSlots(config.prepare_concurrency, config.prepare_pixels)
        self.metrics = metrics or Metrics()
        self._alarm = alarm
        self._polls: dict[int, int] = {}  # job id -> status checks so far (this process's)
        self._loop: LeasedLoop[_Claimed] = LeasedLoop(
            claim=self._claim, handle=self._take_step, release=self._release_own_leases,
            capacity=config.batch, idle=config.idle_sleep, grace=config.shutdown_grace, noun="job",
            until_due=self._until_due, renew=self._renew_lease,
            # renewed three times a lease: a renewal that fails has two more rounds to go
            renew_every=lambda claimed: claimed.lease.total_seconds() / 3,
            # set by the job service as it queues a job (or by `wake()`): look for work at once
            wake=queued)

    # ---- the loop (bot.leased) -----------------------------------------------------------------

    @property
    def last_turn(self) -> float:
        """Monotonic time the loop last turned (/readyz)."""
        return self._loop.last_turn

    def wake(self) -> None:
        """Look for work now (called when a job was just queued)."""
        self._loop.wake()

    async def tick(self) -> int:
        """Claim every due job (up to a batch per phase), take each one step, and wait for them all."""
        return await self._loop.once(self.config.batch)

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then let in-flight steps finish and release what was claimed."""
        await self._loop.run(stop)

    async def drain(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds) for in-flight steps, cancel the rest, then release this worker's leases."""
        await self._loop.drain(timeout)

    async def _until_due(self) -> float | None:
        async with reading(self._sessions) as session:
            due = await JobRepository(session).next_due_at((*SUBMIT_STATES, *POLL_STATES, *DELIVER_STATES))
        return None if due is None else (due - self._clock()).total_seconds()

    async def _release_own_leases(self) -> int:
        async with self._sessions() as session, session.begin():
            return await JobRepository(session).release_all(owner=self.config.owner)

    async def _claim(self, limit: int) -> list[_Claimed]:
        """Claim due jobs, finishing work first (deliveries, then polls, then new submissions)."""
        claimed: list[_Claimed] = []
        # a submission's try is counted as it is claimed, before its risky part, so an input that
        # crashes the process cannot loop forever
        phases = ((DELIVER_STATES, self.config.deliver_lease, self._deliver_step, False),
                  (POLL_STATES, self.config.poll_lease, self._poll_step, False),
                  (SUBMIT_STATES, self.config.submit_lease, self._submit_step, True))
        now = self._clock()
        async with self._sessions() as session, session.begin():
            repository = JobRepository(session)
            for states, lease, step, start_attempt in phases:
                if len(claimed) >= limit:
                    break
                jobs = await repository.claim(states, owner=self.config.owner, now=now, lease_for=lease,
                                              limit=limit - len(claimed), start_attempt=start_attempt)
                claimed.extend(_Claimed(job, step, lease) for job in jobs)
        return claimed

    async def _take_step(self, claimed: _Claimed) -> None:
        job = claimed.job
        notice = pending_notice(job)
        if notice is not None:
            await self._finish_failed(job, self._operations.get(job.operation), notice)
        else:
            await claimed.step(job)

    async def _renew_lease(self, claimed: _Claimed) -> bool:
        """Extend a job's lease while its step runs; False once the step let go of the job, or lost it."""
        held = await self._writes.update(claimed.job.id, owner=self.config.owner,
                                         lease_until=self._clock() + claimed.lease)
        return held is not None

    # ---- state changes ---------------------------------------------------------------------------

    async def _update(self, job: JobRecord, **changes: object) -> JobRecord | None:
        """Write changes if this worker still holds the job's lease (None when it was lost or cancelled)."""
        updated = await self._writes.update(job.id, owner=self.config.owner, **changes)
        if updated is None:
            log.info("job %s: lease lost (cancelled or taken over); dropping this step", job.id)
        return updated

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before a failed step is tried again (bot.backoff): never before the other side's Retry-After."""
        return full_jitter(attempt, base=RETRY_BASE_S, cap=RETRY_CAP_S, rng=self._rng, retry_after=retry_after)

    async def _reschedule(self, job: JobRecord, delay: float, **changes: object) -> None:
        when = self._clock() + timedelta(seconds=delay)
        await self._update(job, next_check_at=when, lease_owner=None, lease_until=None, **changes)

    async def _finish_failed(self, job: JobRecord, operation: Operation | None, failure: Failure) -> None:
        """Tell the user, then record the final state (telling first: a crash may repeat the message, never lose it)."""
        state = JobState.EXPIRED if failure.kind is FailureKind.EXPIRED else JobState.FAILED
        current = await self._current(job)
        if current is None:
            return
        try:
            await self._notifier.report_failure(job, operation, failure)
        except DeliveryError as error:
            if error.retry_after is not None and self._clock() < job.deadline_at + self.config.delivery_grace:
                # the failure is decided; only the telling is left, and it is kept with the job
                log.warning("job %s: could not tell the user about the failure (%s); trying again in %.1fs",
                            job.id, error.reason, error.retry_after)
                await self._reschedule(job, error.retry_after, failure_kind=failure.kind.value, error=_reason(failure))
                return
            log.warning("job %s: could not tell the user about the failure: %s", job.id, error.reason)
        if await self._update(job, state=state, failure_kind=failure.kind.value, error=_reason(failure),
                              finished_at=self._clock(), lease_owner=None, lease_until=None) is not None:
            self._finished(job, state)
        log.info("job %s: %s (%s)", job.id, state, failure.kind)

    async def _current(self, job: JobRecord) -> JobRecord | None:
        """The job as stored now, if this worker still holds it in the same state."""
        async with reading(self._sessions) as session:
            current = await JobRepository(session).get(job.id)
        if current is None or current.lease_owner != self.config.owner or current.state != job.state:
            return None
        return current

    # ---- submit ----------------------------------------------------------------------------------

    async def _submit_step(self, job: JobRecord) -> None:
        operation = self._operations.get(job.operation)
        if operation is None:
            await self._finish_failed(job, None, Failure(FailureKind.BAD_INPUT, "this operation is no longer offered"))
            return
        now = self._clock()
        if now >= job.deadline_at:
            await self._finish_failed(job, operation, Failure(FailureKind.EXPIRED))
            return
        if job.attempts > self.config.max_submit_attempts:
            # every earlier attempt ended without an outcome (the step crashed, or the process died in it):
            # most likely the input itself, so it must not be tried forever
            await self._finish_failed(job, operation, Failure(FailureKind.BAD_INPUT, REPEATED_CRASH))
            return
        posted = False
        try:
            images = [await self._prepare_input(operation, file_id) for file_id in job.inputs]
            refs = [InputImage(await self._handoff.reference(image, operation.request_type),
                               image.width, image.height) for image in images]
            request = operation.build(job.args, refs)
            async with self._service_slots:
                posted = True
                task_id = await self._client.submit(request)
        except Exception as error:
            if posted:
                self._service_outcome("submit", error)
            outcome = _classified(error, SUBMIT_FAILURES)
            if isinstance(outcome, Retry):
                # only a POST the service may have acted on (a task costs a token) uses up an attempt
                await self._retry_submit(job, operation, retry_after_of(error), repr(error),
                                         counted=outcome.counted and posted)
            else:
                await self._finish_failed(job, operation, failure_of(error, outcome))
        else:
            self._service_outcome("submit", None)
            now = self._clock()
            self.metrics.queue_seconds.labels(job.operation).observe(max(0.0, (now - job.created_at).total_seconds()))
            input_pixels = max((image.width * image.height for image in images), default=None) \
                if operation.time_by_pixels else None
            first = self.schedule.first_delay(operation.name, operation.usual_seconds(job.args), input_pixels)
            next_check = min(now + timedelta(seconds=first), job.deadline_at)
            await self._update(job, state=JobState.RUNNING, task_id=task_id, submitted_at=now, input_pixels=input_pixels,
                               next_check_at=next_check, lease_owner=None, lease_until=None)
            log.info("job %s: submitted %s as task %s", job.id, operation.name, task_id)
            if self.schedule.was_heard(task_id):
                # the task ended and called back before it was stored as running: check it now
                await self._check_stored_task_now(task_id)

    async def _retry_submit(self, job: JobRecord, operation: Operation, retry_after: float | None, why: str, *,
                            counted: bool) -> None:
        """Queue the job again after a backoff; a try that surely created no task is given back.

        Tries that failed before reaching the service (an input download, an upload) or that the
        service surely did not act on (429, no connection) cost nothing and go on until the deadline,
        waiting longer as the job grows older; the others are limited to max_submit_attempts.
        """
        if counted and job.attempts >= self.config.max_submit_attempts:
            await self._finish_failed(job, operation, Failure(FailureKind.UNAVAILABLE))
            return
        age = (self._clock() - job.created_at).total_seconds()
        round_ = max(job.attempts, 1 + int(age // UNCOUNTED_BACKOFF_STEP_S))
        delay = self._backoff(round_, retry_after)
        log.warning("job %s: submission failed (%s); trying again in %.1fs", job.id, why, delay)
        attempts = job.attempts if counted else job.attempts - 1
        await self._reschedule(job, delay, state=JobState.QUEUED, attempts=attempts)

    async def _prepare_input(self, operation: Operation, file_id: str) -> PreparedImage:
        async with self._chat_slots.hold():
            data = await self._notifier.fetch_input(file_id)
        # Pillow work off the event loop, so polling and delivery of other jobs go on meanwhile
        return await self.preparation.prepare(data, operation.limits)

    # ---- poll ------------------------------------------------------------------------------------

    async def _poll_step(self, job: JobRecord) -> None:
        operation = self._operations.get(job.operation)
        now = self._clock()
        self._polls[job.id] = self._polls.get(job.id, 0) + 1
        try:
            async with self._service_slots:
                task = await self._client.get_task(job.task_id, retry=self.config.poll_retry)
        except Exception as error:
            self._service_outcome("poll", error)
            outcome = _classified(error, POLL_FAILURES)
            if not isinstance(outcome, Retry):
                await self._finish_failed(job, operation, failure_of(error, outcome))
            elif now >= job.deadline_at:
                await self._finish_failed(job, operation, Failure(FailureKind.EXPIRED))
            else:
                delay = self._backoff(2, retry_after_of(error))
                log.warning("job %s: status check failed (%r); next in %.1fs", job.id, error, delay)
                await self._reschedule(job, delay)
            return
        self._service_outcome("poll", None)
        now = self._clock()
        age = (now - (job.submitted_at or job.created_at)).total_seconds()
        if task.state in (TaskState.COMPLETED, TaskState.FAILED):
            self.metrics.polls_per_task.observe(self._polls.pop(job.id, 1))
            self.metrics.service_seconds.labels(job.operation).observe(max(0.0, age))
        if task.state is TaskState.COMPLETED:
            job = await self._update(job, state=JobState.COMPLETED, result_urls=list(task.result_urls),
                                     next_check_at=now, service_cost=task.credits_increment)
            if job is not None:
                # the row as written: a callback to any replica, even one during this check, is in it
                self.schedule.finished(job.operation, age, job.input_pixels, heard=job.callback_at is not None)
                await self._deliver_step(job)
        elif task.state is TaskState.FAILED:
            kind = FailureKind.CONTENT if task.nsfw else FailureKind.SERVICE_FAILED
            await self._finish_failed(job, operation, Failure(kind, task.reason))
        elif now >= job.deadline_at:
            await self._finish_failed(job, operation, Failure(FailureKind.EXPIRED))
        else:
            delay = self.schedule.next_delay(job.operation, age, job.input_pixels)
            next_check = min(now + timedelta(seconds=delay), job.deadline_at)
            shown = await self._show_progress(job, operation, age)
            called = job.callback_at
            written = await self._update(job, next_check_at=next_check, lease_owner=None, lease_until=None,
                                         **({"progress": shown} if shown is not None else {}))
            if written is not None and written.callback_at != called and job.task_id is not None:
                # its callback came (to any replica) while this check was on its way: the task has ended since
                await self._check_stored_task_now(job.task_id)

    async def _show_progress(self, job: JobRecord, operation: Operation | None, age: float) -> str | None:
        """Edit a slow job's status message when what it says changes (at the service; then every
        PROGRESS_EVERY_S of elapsed time); the note now shown, or None when nothing was edited."""
        if operation is None or (job.status_message_id is None and job.inline_message_id is None):
            return None
        elapsed = int(age // PROGRESS_EVERY_S) * int(PROGRESS_EVERY_S)
        note = f"running:{elapsed}"
        if note == job.progress:
            return None
        return note if await self._notifier.show_progress(job, operation, elapsed) else None

    # ---- deliver ---------------------------------------------------------------------------------

    async def _deliver_step(self, job: JobRecord) -> None:
        operation = self._operations.get(job.operation)
        if operation is None:
            await self._finish_failed(job, None, Failure(FailureKind.DELIVERY, "this operation is no longer offered"))
            return
        now = self._clock()
        if now >= job.deadline_at + self.config.delivery_grace:
            await self._finish_failed(job, operation, Failure(FailureKind.DELIVERY, "the result could not be sent in time"))
            return
        files: list[ResultFile] = []
        try:
            for index, url in enumerate(job.result_urls, start=1):
                fetch = self._fetcher.fetch_video if operation.result is ResultKind.VIDEO else self._fetcher.fetch
                try:
                    files.append(await fetch(url, name=f"{operation.name}-{job.id}-{index}"))
                except Exception as error:
                    await self._delivery_failed(job, operation, error)
                    return
            await self._send(job, operation, files)
        finally:
            # a video waits in a file only until it is sent (or the step gives up: the next one fetches again)
            await asyncio.to_thread(discard, *(file.path for file in files))

    async def _send(self, job: JobRecord, operation: Operation, files: list[ResultFile]) -> None:
        """Send the downloaded results and record the job delivered."""
        # a /cancel may have come while we downloaded (it drops the lease): its results must never be sent.
        # Renewing the lease asks that in a write, which shares a commit with other steps' writes.
        if await self._update(job, lease_until=self._clock() + self.config.deliver_lease) is None:
            return
        try:
            async with self._chat_slots.hold():
                sent = await self._notifier.deliver(job, operation, files)
        except Exception as error:
            await self._delivery_failed(job, operation, error)
            return
        # From Telegram's answer until this commit, a crash makes the result go out twice: keep it short.
        answered = time.monotonic()
        delivered = await self._update(job, state=JobState.DELIVERED, sent_message_ids=sent.message_ids,
                                       result_files=sent.files,
                                       finished_at=self._clock(), lease_owner=None, lease_until=None)
        if delivered is not None:
            self._finished(job, JobState.DELIVERED)
            # a COMPLETED job's next check is when its result was seen (or its delivery last retried)
            self.metrics.deliver_seconds.labels(job.operation).observe(
                max(0.0, (self._clock() - job.next_check_at).total_seconds()))
        log.info("job %s: delivered %d file(s) (recorded %.0f ms after Telegram took them)", job.id, len(files),
                 (time.monotonic() - answered) * 1000)

    async def _delivery_failed(self, job: JobRecord, operation: Operation, error: Exception) -> None:
        """A result that could not be fetched or sent: try again later, or tell the user (if the chat still listens)."""
        outcome = _classified(error, DELIVER_FAILURES)
        if isinstance(outcome, Retry):
            await self._reschedule(job, self._backoff(2, retry_after_of(error)))
        else:
            log.warning("job %s: delivery failed for good: %s", job.id, error)
            await self._finish_failed(job, operation, failure_of(error, outcome))

    # ---- callbacks, metrics, alarms -------------------------------------------------------------

    async def check_now(self, task_id: str) -> bool:
        """A service callback named this task: make its running job's next status check due now."""
        self.schedule.heard(task_id)
        return await self._check_stored_task_now(task_id)

    async def _check_stored_task_now(self, task_id: str) -> bool:
        async with self._sessions() as session, session.begin():
            job_id = await JobRepository(session).check_now(task_id, now=self._clock())
        if job_id is None:
            return False
        self.wake()
        return True

    def _finished(self, job: JobRecord, state: JobState) -> None:
        self._polls.pop(job.id, None)
        self.metrics.jobs_finished.labels(job.operation, state.value).inc()

    def _service_outcome(self, call: str, error: BaseException | None) -> None:
        """Count a service call by outcome, and tell the alarm about the account's health."""
        self.metrics.service_calls.labels(call, service_outcome(error)).inc()
        if self._alarm is not None:
            self._alarm.observe(error)
