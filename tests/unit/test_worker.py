"""The worker one tick at a time: a real job store, the service behind httpx.MockTransport, an in-memory chat."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.aiart import AiartClient, RetryPolicy
from bot.jobs.handoff import ImageHandoff
from bot.jobs.notifier import Delivered, DeliveryError, Failure, FailureKind, ResultFile
from bot.jobs.polling import PollSchedule
from bot.jobs.results import ResultFetcher, ResultGuard
from bot.jobs.service import JobRequest, JobService
from bot.jobs.worker import Worker, WorkerConfig
from bot.operations.catalogue import Operation
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.store import JobRecord, JobRepository, JobState, session_factory
from bot.store.db import Sessions
from tests.fakes import samples

BASE_URL = "http://service.test"
OWNER = "unit-worker"
CHAT_ID = 4242
PHOTO_ID = "photo-file-id"
RESULT_PNG = samples.png(64, 48)
Hook = Callable[[], Awaitable[None]]


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@dataclass
class FakeService:
    """The image service as an httpx.MockTransport handler: scripted POST answers, task states, result files."""

    clock: Clock
    #: answers for the next POSTs, oldest first; when empty a POST creates a task
    submit_answers: list[httpx.Response] = field(default_factory=list)
    #: task id -> status the next query reports (0 running, 1 done, 2 failed)
    status: dict[str, int] = field(default_factory=dict)
    posts: list[datetime] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    on_submit: Hook | None = None
    on_query: Hook | None = None
    on_result: Hook | None = None

    async def __call__(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "POST":
            self.posts.append(self.clock())
            if self.on_submit is not None:
                await self.on_submit()
            if self.submit_answers:
                return self.submit_answers.pop(0)
            task_id = f"{len(self.posts):032x}"
            self.status[task_id] = 0
            return _envelope({"taskId": task_id})
        if path.startswith("/v1/aiart/tasks/"):
            task_id = path.rsplit("/", 1)[1]
            self.queries.append(task_id)
            if self.on_query is not None:
                await self.on_query()
            status = self.status[task_id]
            return _envelope({"taskId": task_id, "status": status,
                              "resultUrl": f"{BASE_URL}/files/{task_id}.png" if status == 1 else "",
                              **({"msg": "the model gave up"} if status == 2 else {})})
        if path.startswith("/files/"):
            if self.on_result is not None:
                await self.on_result()
            return httpx.Response(200, content=RESULT_PNG, headers={"Content-Type": "image/png"})
        return httpx.Response(404)

    def finish_all(self, status: int = 1) -> None:
        """Every task created so far reports `status` from now on."""
        self.status = dict.fromkeys(self.status, status)


def _envelope(data: dict[str, object]) -> httpx.Response:
    return httpx.Response(200, json={"code": "000", "msg": "ok", "data": data})


@dataclass
class RecordingChat:
    """The worker's Notifier in memory: inputs to hand out, and what was delivered or reported."""

    inputs: dict[str, bytes]
    crash_on_fetch: bool = False
    #: this many failure reports fail as if Telegram were unreachable (try again in 3 s)
    unreachable_reports: int = 0
    #: when set, deliveries wait for it (a slow upload)
    hold_delivery: asyncio.Event | None = None
    delivering: asyncio.Event = field(default_factory=asyncio.Event)
    #: when set, Telegram refuses every result with this reason (trying again cannot help)
    refuse_delivery: str | None = None
    fetches: int = 0
    delivered: list[tuple[int, list[ResultFile]]] = field(default_factory=list)
    failures: list[tuple[int, Failure]] = field(default_factory=list)
    progress: list[tuple[int, int]] = field(default_factory=list)

    async def fetch_input(self, file_id: str) -> bytes:
        self.fetches += 1
        if self.crash_on_fetch:
            raise RuntimeError("the decoder blew up")  # stands in for an input that crashes the process
        return self.inputs[file_id]

    async def deliver(self, job: JobRecord, operation: Operation, results: Sequence[ResultFile]) -> Delivered:
        self.delivering.set()
        if self.hold_delivery is not None:
            await self.hold_delivery.wait()
        if self.refuse_delivery is not None:
            raise DeliveryError(self.refuse_delivery)
        self.delivered.append((job.id, list(results)))
        return Delivered([1000 + len(self.delivered)], [])

    async def show_progress(self, job: JobRecord, operation: Operation, elapsed: int) -> bool:
        self.progress.append((job.id, elapsed))
        return True

    async def report_failure(self, job: JobRecord, operation: Operation | None, failure: Failure) -> None:
        if self.unreachable_reports > 0:
            self.unreachable_reports -= 1
            raise DeliveryError("network trouble", retry_after=3.0)
        self.failures.append((job.id, failure))


@dataclass
class Rig:
    """A worker with everything around it."""

    worker: Worker
    jobs: JobService
    sessions: Sessions
    service: FakeService
    chat: RecordingChat
    clock: Clock
    make_worker: Callable[[WorkerConfig], Worker]

    async def queue(self, operation: str = "upscale", args: dict[str, object] | None = None) -> JobRecord:
        return await self.jobs.enqueue(JobRequest(
            chat_id=CHAT_ID, chat_type="private", chat_title=None, user_id=7, username="u", first_name="U",
            reply_to_message_id=11, operation=operation, args=args or {"factor": 2}, inputs=[PHOTO_ID]))

    async def job(self, job_id: int) -> JobRecord:
        async with self.sessions() as session:
            job = await JobRepository(session).get(job_id)
        assert job is not None
        return job

    async def take_over(self, job_id: int, owner: str) -> None:
        """Another worker takes the job's lease (this one's lease ran out meanwhile)."""
        async with self.sessions() as session, session.begin():
            await JobRepository(session).update(job_id, owner=None, lease_owner=owner,
                                                lease_until=self.clock() + timedelta(minutes=5))


async def _no_sleep(seconds: float) -> None:
    await asyncio.sleep(0)


@pytest.fixture
def worker_config() -> WorkerConfig:
    return WorkerConfig(owner=OWNER)


@pytest.fixture
async def rig(store_engine: AsyncEngine, worker_config: WorkerConfig) -> AsyncIterator[Rig]:
    clock = Clock()
    service = FakeService(clock)
    http = httpx.AsyncClient(transport=httpx.MockTransport(service))
    # the client gives up at once, so what is tested is the worker's own retrying
    client = AiartClient(http, base_url=BASE_URL, api_key="unit-key", static_url=BASE_URL,
                         retry=RetryPolicy(attempts=1), sleep=_no_sleep)
    sessions = session_factory(store_engine)
    chat = RecordingChat({PHOTO_ID: samples.jpeg(64, 48)})
    catalogue = build_catalogue(load_catalogue())
    jobs = JobService(sessions, deadline=timedelta(minutes=20), clock=clock)

    def make_worker(config: WorkerConfig) -> Worker:
        return Worker(sessions, client, chat, catalogue, handoff=ImageHandoff(client), fetcher=ResultFetcher(http, guard=ResultGuard(trusted=[BASE_URL])),
                      config=config, clock=clock)

    yield Rig(make_worker(worker_config), jobs, sessions, service, chat, clock, make_worker)
    await http.aclose()


async def test_a_job_goes_from_queued_to_delivered(rig: Rig):
    job = await rig.queue()
    assert await rig.worker.tick() == 1
    running = await rig.job(job.id)
    assert running.state is JobState.RUNNING
    assert running.task_id is not None and running.lease_owner is None
    assert running.next_check_at > rig.clock()  # the first check waits for the task to make progress

    assert await rig.worker.tick() == 0  # nothing is due yet
    rig.clock.advance(60)
    await rig.worker.tick()
    assert (await rig.job(job.id)).state is JobState.RUNNING  # the task is still at status 0
    rig.service.finish_all()
    rig.clock.advance(60)
    await rig.worker.tick()

    delivered = await rig.job(job.id)
    assert delivered.state is JobState.DELIVERED
    assert delivered.sent_message_ids == [1001]
    assert delivered.lease_owner is None and delivered.finished_at == rig.clock()
    [(job_id, [result])] = rig.chat.delivered
    assert job_id == job.id and result.data == RESULT_PNG and result.mime == "image/png"
    assert rig.chat.failures == []
    assert len(rig.service.posts) == 1


async def test_a_rate_limited_submission_waits_for_retry_after(rig: Rig):
    rig.service.submit_answers.append(httpx.Response(
        429, headers={"Retry-After": "7"}, json={"code": "429", "msg": "slow down", "data": None}))
    job = await rig.queue()
    await rig.worker.tick()
    queued = await rig.job(job.id)
    assert queued.state is JobState.QUEUED and queued.lease_owner is None
    assert queued.attempts == 0  # the service surely made no task: the try is given back
    assert queued.next_check_at == rig.clock() + timedelta(seconds=7)

    rig.clock.advance(6.9)
    assert await rig.worker.tick() == 0
    assert len(rig.service.posts) == 1  # not a moment before the service said
    rig.clock.advance(0.2)
    await rig.worker.tick()
    assert len(rig.service.posts) == 2
    assert (rig.service.posts[1] - rig.service.posts[0]).total_seconds() >= 7
    assert (await rig.job(job.id)).state is JobState.RUNNING


async def test_rate_limits_never_use_up_the_attempts(rig: Rig):
    limit = rig.worker.config.max_submit_attempts
    for _ in range(limit + 2):
        rig.service.submit_answers.append(httpx.Response(
            429, headers={"Retry-After": "1"}, json={"code": "429", "msg": "slow down", "data": None}))
    job = await rig.queue()
    for _ in range(limit + 3):
        await rig.worker.tick()
        rig.clock.advance(120)  # past any backoff
    assert len(rig.service.posts) == limit + 3
    assert (await rig.job(job.id)).state is JobState.RUNNING
    assert rig.chat.failures == []


async def test_server_errors_use_up_the_attempts_and_the_user_is_told(rig: Rig):
    limit = rig.worker.config.max_submit_attempts
    for _ in range(limit + 1):
        rig.service.submit_answers.append(httpx.Response(503, json={"code": "999", "msg": "down", "data": None}))
    job = await rig.queue()
    for _ in range(limit + 1):
        await rig.worker.tick()
        rig.clock.advance(120)
    # each 5xx may have created a (paid) task, so the tries are limited
    assert len(rig.service.posts) == limit
    assert (await rig.job(job.id)).state is JobState.FAILED
    assert [failure.kind for _, failure in rig.chat.failures] == [FailureKind.UNAVAILABLE]


async def test_a_failure_that_cannot_be_told_yet_is_told_later(rig: Rig):
    rig.service.submit_answers.append(httpx.Response(400, json={"code": "400", "msg": "bad", "data": None}))
    rig.chat.unreachable_reports = 1
    job = await rig.queue()
    await rig.worker.tick()
    waiting = await rig.job(job.id)
    assert not waiting.is_final and waiting.lease_owner is None  # decided, but the user does not know yet
    assert waiting.failure_untold and waiting.failure_kind == "rejected" and waiting.error.endswith(": bad")
    assert waiting.next_check_at == rig.clock() + timedelta(seconds=3)
    assert rig.chat.failures == []
    rig.clock.advance(3)
    await rig.worker.tick()
    failed = await rig.job(job.id)
    assert failed.state is JobState.FAILED and not failed.failure_untold
    assert failed.failure_kind == "rejected" and failed.error == waiting.error  # `error` keeps only the reason
    [(_, failure)] = rig.chat.failures
    assert failure.kind is FailureKind.REJECTED and "bad" in (failure.detail or "")
    assert len(rig.service.posts) == 1  # telling again never submits again


async def test_a_refused_request_fails_and_the_user_is_told(rig: Rig):
    rig.service.submit_answers.append(httpx.Response(
        400, json={"code": "400", "msg": "upscaling_resize out of range", "data": None}))
    job = await rig.queue()
    await rig.worker.tick()
    failed = await rig.job(job.id)
    assert failed.state is JobState.FAILED and failed.lease_owner is None
    assert failed.failure_kind == "rejected" and failed.error.endswith(": upscaling_resize out of range")
    [(job_id, failure)] = rig.chat.failures
    assert job_id == job.id and failure.kind is FailureKind.REJECTED
    assert "upscaling_resize out of range" in (failure.detail or "")
    rig.clock.advance(600)
    await rig.worker.tick()
    assert len(rig.service.posts) == 1  # a 400 is never sent again


async def test_a_task_past_its_deadline_expires_and_the_user_is_told(rig: Rig):
    rig.jobs = JobService(rig.sessions, deadline=timedelta(seconds=30), clock=rig.clock)
    job = await rig.queue()
    await rig.worker.tick()
    assert (await rig.job(job.id)).next_check_at <= job.deadline_at  # never checked later than the deadline
    rig.clock.advance(31)
    await rig.worker.tick()
    expired = await rig.job(job.id)
    assert expired.state is JobState.EXPIRED
    assert expired.failure_kind == "expired" and expired.error is None  # nothing more to say than the kind
    assert [failure.kind for _, failure in rig.chat.failures] == [FailureKind.EXPIRED]
    assert rig.chat.delivered == []


async def test_a_job_queued_past_its_deadline_is_never_submitted(rig: Rig):
    rig.jobs = JobService(rig.sessions, deadline=timedelta(seconds=5), clock=rig.clock)
    job = await rig.queue()
    rig.clock.advance(6)
    await rig.worker.tick()
    assert (await rig.job(job.id)).state is JobState.EXPIRED
    assert rig.service.posts == []
    assert [failure.kind for _, failure in rig.chat.failures] == [FailureKind.EXPIRED]


async def test_a_job_cancelled_while_its_task_is_checked_is_never_delivered(rig: Rig):
    job = await rig.queue()
    await rig.worker.tick()
    rig.service.finish_all()

    async def user_cancels() -> None:
        await rig.jobs.cancel(CHAT_ID, user_id=7)

    rig.service.on_query = user_cancels
    rig.clock.advance(60)
    await rig.worker.tick()
    assert rig.service.queries  # the check happened, and saw the finished task
    assert (await rig.job(job.id)).state is JobState.CANCELLED
    rig.clock.advance(60)
    await rig.worker.tick()
    assert rig.chat.delivered == [] and rig.chat.failures == []


async def test_a_job_cancelled_while_its_result_downloads_is_never_delivered(rig: Rig):
    job = await rig.queue()
    await rig.worker.tick()
    rig.service.finish_all()

    async def user_cancels() -> None:
        await rig.jobs.cancel(CHAT_ID, user_id=7)

    rig.service.on_result = user_cancels
    rig.clock.advance(60)
    await rig.worker.tick()
    assert (await rig.job(job.id)).state is JobState.CANCELLED
    assert rig.chat.delivered == []


async def test_a_step_whose_lease_was_taken_over_writes_nothing(rig: Rig):
    job = await rig.queue()

    async def another_worker_takes_it() -> None:
        await rig.take_over(job.id, "other-worker")

    rig.service.on_submit = another_worker_takes_it
    await rig.worker.tick()
    after = await rig.job(job.id)
    # the POST went out, but its outcome belongs to the lease holder now: no RUNNING, no task id from us
    assert len(rig.service.posts) == 1
    assert after.state is JobState.SUBMITTING and after.task_id is None
    assert after.lease_owner == "other-worker"
    assert rig.chat.failures == [] and rig.chat.delivered == []


async def test_a_delivery_whose_lease_was_taken_over_is_not_recorded(rig: Rig):
    job = await rig.queue()
    await rig.worker.tick()
    rig.service.finish_all()

    async def another_worker_takes_it() -> None:
        await rig.take_over(job.id, "other-worker")

    rig.service.on_result = another_worker_takes_it
    rig.clock.advance(60)
    await rig.worker.tick()
    after = await rig.job(job.id)
    assert after.state is JobState.COMPLETED and after.lease_owner == "other-worker"
    assert rig.chat.delivered == []


async def test_an_input_that_crashes_every_attempt_ends_after_the_attempt_limit(rig: Rig):
    rig.chat.crash_on_fetch = True
    job = await rig.queue()
    limit = rig.worker.config.max_submit_attempts
    for attempt in range(1, limit + 1):
        await rig.worker.tick()
        crashed = await rig.job(job.id)
        assert crashed.attempts == attempt  # counted before the risky part
        assert crashed.state is JobState.SUBMITTING and crashed.lease_owner == OWNER
        await rig.worker.drain(0)  # what a restart does first: release this worker's leases
    await rig.worker.tick()
    failed = await rig.job(job.id)
    # the claim that gives up counts itself too (a claim counts the try before anything else happens)
    assert failed.state is JobState.FAILED and failed.attempts == limit + 1
    assert rig.chat.fetches == limit
    [(_, failure)] = rig.chat.failures
    assert failure.kind is FailureKind.BAD_INPUT
    assert rig.service.posts == []


async def test_a_crashed_step_is_retried_once_its_lease_runs_out(rig: Rig):
    rig.chat.crash_on_fetch = True
    job = await rig.queue()
    await rig.worker.tick()
    rig.chat.crash_on_fetch = False
    rig.clock.advance(rig.worker.config.submit_lease.total_seconds() - 1)
    assert await rig.worker.tick() == 0  # still leased to the step that crashed
    rig.clock.advance(2)
    await rig.worker.tick()
    assert (await rig.job(job.id)).state is JobState.RUNNING


async def test_a_result_telegram_refuses_is_reported_instead(rig: Rig):
    rig.chat.refuse_delivery = "Request Entity Too Large"
    job = await rig.queue()
    await rig.worker.tick()
    rig.service.finish_all()
    rig.clock.advance(60)
    await rig.worker.tick()
    assert (await rig.job(job.id)).state is JobState.FAILED
    [(_, failure)] = rig.chat.failures
    assert failure.kind is FailureKind.DELIVERY and failure.detail == "Request Entity Too Large"


async def test_a_failed_task_is_reported_with_its_reason(rig: Rig):
    job = await rig.queue()
    await rig.worker.tick()
    rig.service.finish_all(status=2)
    rig.clock.advance(60)
    await rig.worker.tick()
    assert (await rig.job(job.id)).state is JobState.FAILED
    [(_, failure)] = rig.chat.failures
    assert failure.kind is FailureKind.SERVICE_FAILED and failure.detail == "the model gave up"



SHORT_LEASES = WorkerConfig(owner=OWNER, submit_lease=timedelta(seconds=0.3), poll_lease=timedelta(seconds=0.3),
                            deliver_lease=timedelta(seconds=0.3), shutdown_grace=0.3)


@pytest.mark.parametrize("worker_config", [SHORT_LEASES])
async def test_a_long_step_keeps_its_lease_and_no_other_worker_takes_the_job(rig: Rig):
    job = await rig.queue()
    await rig.worker.tick()
    rig.service.finish_all()
    rig.clock.advance(60)
    rig.chat.hold_delivery = asyncio.Event()
    delivering = asyncio.create_task(rig.worker.tick())
    await asyncio.wait_for(rig.chat.delivering.wait(), 5)
    other = rig.make_worker(replace(SHORT_LEASES, owner="other-worker"))
    for _ in range(3):
        rig.clock.advance(10)  # far past the lease it was claimed with
        await asyncio.sleep(0.25)  # ... but renewed meanwhile, every 0.1 s
        assert await other.tick() == 0
    rig.chat.hold_delivery.set()
    await delivering
    assert (await rig.job(job.id)).state is JobState.DELIVERED
    assert len(rig.chat.delivered) == 1


@pytest.mark.parametrize("worker_config", [SHORT_LEASES])
async def test_stopping_waits_a_bounded_time_then_lets_go_of_every_job(rig: Rig):
    job = await rig.queue()
    await rig.worker.tick()
    rig.service.finish_all()
    rig.clock.advance(60)
    rig.chat.hold_delivery = asyncio.Event()  # never set: the upload hangs
    stop = asyncio.Event()
    running = asyncio.create_task(rig.worker.run(stop))
    await asyncio.wait_for(rig.chat.delivering.wait(), 5)
    stop.set()
    started = asyncio.get_running_loop().time()
    await asyncio.wait_for(running, 5)
    assert asyncio.get_running_loop().time() - started < 2
    stopped = await rig.job(job.id)
    assert stopped.state is JobState.COMPLETED and stopped.lease_owner is None  # free for the next start
    assert rig.chat.delivered == []



async def test_a_refused_request_is_kept_as_a_refused_failure_that_the_worker_leaves_alone(rig: Rig):
    request = JobRequest(chat_id=CHAT_ID, chat_type="private", chat_title=None, user_id=7, username="u",
                         first_name="U", reply_to_message_id=12, operation="upscale", args={}, inputs=[])
    refused = await rig.jobs.record_refused(request, "The factor must be 2 or 4.")
    assert refused is not None and refused.state is JobState.FAILED
    assert (refused.refused, refused.failure_kind, refused.error) == (True, "bad_input", "The factor must be 2 or 4.")
    assert not refused.failure_untold
    assert await rig.worker.tick() == 0
    assert rig.chat.failures == []  # the chat side already told the user


async def test_callbacks_stay_trusted_when_another_replica_heard_one_and_not_when_none_came(rig: Rig):
    here, there = rig.make_worker(WorkerConfig(owner="here")), rig.make_worker(WorkerConfig(owner="there"))
    here.schedule = schedule = PollSchedule(callbacks=True)
    for _ in range(schedule.tolerated + 1):
        job = await rig.queue()
        await here.tick()
        running = await rig.job(job.id)
        assert running.next_check_at >= rig.clock() + timedelta(seconds=1)  # callbacks first: the first check waits
        rig.service.finish_all()
        assert await there.check_now(running.task_id)  # the service called the other replica back
        await here.tick()
        assert (await rig.job(job.id)).state is JobState.DELIVERED
    assert schedule.trusted  # each job's row says its callback came, to whichever replica

    for _ in range(schedule.tolerated + 1):
        job = await rig.queue()
        await here.tick()
        rig.service.finish_all()
        rig.clock.now = (await rig.job(job.id)).next_check_at  # no callback: the late check finds the task finished
        await here.tick()
        assert (await rig.job(job.id)).state is JobState.DELIVERED
    assert not schedule.trusted


async def test_a_callback_to_another_replica_during_a_check_makes_the_next_check_due_now(rig: Rig):
    there = rig.make_worker(WorkerConfig(owner="there"))
    job = await rig.queue()
    await rig.worker.tick()
    running = await rig.job(job.id)
    assert running.task_id is not None

    async def called_back_elsewhere() -> None:
        rig.service.on_query = None
        await there.check_now(running.task_id)  # the task ended just after the service answered "running"

    rig.service.on_query = called_back_elsewhere
    rig.clock.now = running.next_check_at
    await rig.worker.tick()
    checked = await rig.job(job.id)
    assert checked.state is JobState.RUNNING and checked.callback_at is not None
    assert checked.next_check_at <= rig.clock()  # not the scheduled pace: the row says the callback came
    rig.service.finish_all()
    await rig.worker.tick()
    assert (await rig.job(job.id)).state is JobState.DELIVERED
