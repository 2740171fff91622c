"""Faults from both sides at once: a fifth of the service's and of Telegram's answers go wrong.

The sandbox answers 5xx, 429 (Retry-After: 1), stalls, dropped connections and malformed JSON, and
fails some tasks; the fake Bot API answers 5xx, 429 (retry_after 1), stalls and drops, on every method
the bot uses while it works, getUpdates and file downloads included (start-up calls are spared: a
bot that cannot start is a different story). Every request must still end delivered, or failed with
the user told; and after any 429 the same request must not come again before the wait it asked for.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest

from bot.config import Settings
from bot.sandbox import Sandbox, SandboxConfig
from bot.sandbox.config import FaultConfig
from bot.store import FINAL_STATES, JobRecord, JobRepository, JobState, create_engine, session_factory
from tests.e2e.conftest import SERVICE_KEY
from tests.fakes import samples
from tests.fakes.telegram import ApiCall, FakeTelegram, TgFaults, User, private_chat

#: seeds whose fault sequences mix every kind early on (the sandbox's picks follow its request order)
SERVICE_SEED = 7
TELEGRAM_SEED = 20240
FAULT_RATE = 0.2
REQUESTS_PER_CHAT = 3  # the default per-user limit of jobs in progress
CHATS = 12
CAPTIONS = ("/upscale 2", "/colorize", "/removebg", "/restore")
#: what the bot calls on Telegram while it works; getMe, setMyCommands and deleteWebhook run at start-up
FAULTED_METHODS = frozenset({"getUpdates", "download", "getFile", "sendMessage", "sendPhoto", "sendDocument",
                             "sendMediaGroup", "deleteMessage", "editMessageText", "answerCallbackQuery"})
SERVICE_RETRY_AFTER = 1.0  # what the sandbox's 429 fault asks for
# 429s are answered as Telegram paces; the waits they ask for are measured on the real clock
pytestmark = [pytest.mark.timeout(120), pytest.mark.telegram_limits, pytest.mark.xdist_group("timing")]


@dataclass
class Stamped:
    """A request the sandbox received, when, and which fault it was answered with."""

    at: float
    method: str
    path: str
    body_hash: str
    fault: str | None = None

    @property
    def key(self) -> tuple[str, str, str] | None:
        """Same key, same request of one job: a submission repeats its body, a task query names its task.

        None for the upload-slot request, which carries nothing of its job (every job asks the same);
        the client honours its Retry-After by the same code path as the task query's, checked here.
        """
        if self.path == "/v1/upload/sign":
            return None
        return self.method, self.path, self.body_hash


def stamp_requests(sandbox: Sandbox) -> list[Stamped]:
    """Record the arrival time and injected fault of every request the sandbox receives."""
    stamped: list[Stamped] = []
    remember, pick = sandbox.state.remember, sandbox.faults.pick

    def remembering(request: Any) -> None:
        remember(request)
        stamped.append(Stamped(time.monotonic(), request.method, request.path,
                               hashlib.sha256(request.body).hexdigest()))

    def picking() -> str | None:
        fault = pick()
        # the gate picks right after the record middleware remembered this request, with no await between
        stamped[-1].fault = fault
        return fault

    sandbox.state.remember = remembering  # type: ignore[method-assign]
    sandbox.faults.pick = picking  # type: ignore[method-assign]
    return stamped


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    faults = FaultConfig(rate=FAULT_RATE, timeout_seconds=1.5, fail_task_rate=0.1, seed=SERVICE_SEED)
    service = Sandbox(SandboxConfig(api_key=SERVICE_KEY, task_seconds=0.3, faults=faults))
    await service.start()
    yield service
    await service.stop()


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    fake = FakeTelegram(faults=TgFaults(rate=FAULT_RATE, seed=TELEGRAM_SEED, retry_after=1, timeout_seconds=1.5,
                                        methods=FAULTED_METHODS))
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def stamped(sandbox: Sandbox) -> list[Stamped]:
    return stamp_requests(sandbox)


def _telegram_key(call: ApiCall) -> tuple[Any, ...]:
    """What makes two calls the same request for one job: method, chat, and the message or file they are about."""
    params = call.params
    reply = params.get("reply_parameters")
    target = reply.get("message_id") if isinstance(reply, dict) else None
    return call.method, params.get("chat_id"), target or params.get("message_id") or params.get("file_id")


def _retry_after(call: ApiCall) -> float:
    return float(((call.error or {}).get("parameters") or {}).get("retry_after", 0))


def early_retries(events: list[tuple[float, Any, float | None]]) -> list[str]:
    """Given (time, key, wait asked for or None) in time order, the repeats that came before the wait was over."""
    asked_until: dict[Any, float] = {}
    early = []
    for at, key, wait in events:
        if key is None:
            continue
        until = asked_until.pop(key, None)
        if until is not None and at < until:
            early.append(f"{key} again at {at:.3f}, before {until:.3f}")
        if wait is not None:
            asked_until[key] = at + wait
    return early


def answers(telegram: FakeTelegram, requests: list[dict[str, Any]]) -> dict[tuple[int, int], tuple[int, int]]:
    """(chat, message) -> (results sent, failure notices sent) replying to each request."""
    counted = {}
    for request in requests:
        chat_id, message_id = request["chat"]["id"], request["message_id"]
        replies = [m for m in telegram.sent(chat_id) if m.reply_to_message_id == message_id and not m.deleted]
        results = len({m.media_group_id or m.message_id for m in replies if m.media_kind is not None})
        failures = sum(1 for m in replies if m.text and m.text.startswith("❌"))
        counted[(chat_id, message_id)] = (results, failures)
    return counted


async def stored_jobs(settings: Settings, count: int) -> list[JobRecord]:
    """The first `count` jobs as stored now."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            jobs = [await JobRepository(session).get(job_id) for job_id in range(1, count + 1)]
    finally:
        await engine.dispose()
    return [job for job in jobs if job is not None]


def describe(jobs: list[JobRecord]) -> list[str]:
    return [f"{job.id} chat {job.chat_id} msg {job.reply_to_message_id} {job.state} attempts {job.attempts} "
            f"failure {job.failure_kind} {job.error!r} next {job.next_check_at:%H:%M:%S} lease {job.lease_owner}" for job in jobs]


async def job_states(settings: Settings) -> dict[JobState, int]:
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            return await JobRepository(session).counts_by_state()
    finally:
        await engine.dispose()


async def test_every_job_ends_delivered_or_told_and_no_rate_limit_is_retried_early(
        bot, telegram: FakeTelegram, sandbox: Sandbox, stamped: list[Stamped], settings: Settings):
    users = [User(7000 + number, f"Faulty{number}") for number in range(CHATS)]
    requests = []
    for round_ in range(REQUESTS_PER_CHAT):
        for number, user in enumerate(users):
            # a different picture each time, so a resubmission is recognisable by its body
            photo = samples.jpeg(160 + 8 * round_, 120 + 8 * number, color=(40 * number, 60 * round_, 90))
            requests.append(telegram.user_sends(private_chat(user), user, photo=photo,
                                                caption=CAPTIONS[(round_ + number) % len(CAPTIONS)]))

    def unanswered() -> list[tuple[int, int]]:
        return [request for request, counts in answers(telegram, requests).items() if sum(counts) == 0]

    with contextlib.suppress(AssertionError):
        await telegram.wait_for(lambda: not unanswered(), timeout=60)
    assert unanswered() == [], describe(await stored_jobs(settings, len(requests)))
    for _ in range(100):  # the last answers' rows are written just after they are sent
        states = await job_states(settings)
        if not any(count for state, count in states.items() if state not in FINAL_STATES):
            break
        await asyncio.sleep(0.1)

    counted = answers(telegram, requests)
    delivered = sum(1 for results, _ in counted.values() if results)
    told = sum(1 for results, failures in counted.values() if failures and not results)
    assert delivered + told == len(requests)
    assert all(results + failures == 1 for results, failures in counted.values()), counted
    assert sum(count for state, count in states.items() if state not in FINAL_STATES) == 0, states
    assert states[JobState.DELIVERED] == delivered

    service_events = [(s.at, s.key, SERVICE_RETRY_AFTER if s.fault == "429" else None) for s in stamped]
    telegram_events = [(c.time, _telegram_key(c), _retry_after(c) if c.status == 429 else None)
                       for c in telegram.calls]
    assert early_retries(service_events) == []
    assert early_retries(sorted(telegram_events, key=lambda event: event[0])) == []

    failures = Counter(job.failure_kind for job in await stored_jobs(settings, len(requests))
                       if job.state is not JobState.DELIVERED)
    service_429s = sum(1 for s in stamped if s.fault == "429")
    telegram_429s = sum(1 for c in telegram.calls if c.status == 429)
    # the run must actually have met rate limits on both sides, or the check above proves nothing
    assert service_429s > 0 and telegram_429s > 0
    assert sum(sandbox.faults_injected.values()) >= 10 and telegram.stats["faults"] >= 10
    print(f"\nfault run: {len(requests)} jobs, {delivered} delivered, {told} failed and told {dict(failures)}; "
          f"service faults {dict(sandbox.faults_injected)}, Telegram faults "
          f"{ {k: v for k, v in telegram.stats.items() if k.startswith('fault_')} }; "
          f"429s: service {service_429s}, Telegram {telegram_429s}; early retries 0")


def test_early_retries_are_spotted():
    # the checker itself: a repeat inside the wait is reported, one after it is not
    events = [(0.0, "a", 1.0), (0.5, "a", None), (2.0, "b", 1.0), (3.5, "b", None)]
    assert len(early_retries(events)) == 1
