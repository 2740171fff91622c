"""Chaos run: SIGKILL the bot at chosen moments while it works through many jobs, then count the damage.

`python -m bench.chaos` runs it from the command line; CI runs a small one (tests/e2e/test_chaos.py).
The fake Bot API and the sandbox run in this process; the bot runs as a subprocess (`python -m bot`)
against them, with an SQLite file in a temporary directory. Requests (upscale, colorize, removebg,
headshot) arrive from many chats while the bot is killed `kills` times and restarted at once. Each
kill is armed for a phase and fires just after that phase shows activity: intake (a handler
acknowledged a request: a reaction or a status message), submit (a POST reached the service), poll (a
status check reached it), deliver (Telegram accepted a result). At the end the fake's records and the
database tell how many requests were never answered (lost), answered more than once (duplicated), or
left unfinished (stuck). A result may go out again only when a kill fell between Telegram's answer and
the commit recording it: right after each kill the harness notes the requests answered whose job was not
yet recorded final (exposed); the run passes when lost = 0, stuck = 0 and every duplicated request was
exposed (and answered again at most once per kill that exposed it). Deliveries run concurrently, so one
kill may expose several requests; under load, more.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bot.credits import audit
from bot.sandbox import Sandbox
from bot.store import create_engine, session_factory
from bot.store.records import FINAL_STATES
from tests.fakes import samples
from tests.fakes.telegram import ApiCall, Chat, FakeTelegram, User, group, private_chat
from tests.harness import BotProcess, bot_settings, fakes, sqlite_url

WORKER_ID = "chaos-worker"
#: (operation, caption): a mix of single photos, a PNG document and an album
REQUESTS = (("upscale", "/upscale 2"), ("colorize", "/colorize"), ("removebg", "/removebg"),
            ("headshot", "/headshot business 2"))
PHASES = ("intake", "submit", "poll", "deliver")
RESULT_METHODS = frozenset({"sendPhoto", "sendDocument", "sendMediaGroup"})
ANSWER_METHODS = RESULT_METHODS | {"sendMessage"}
FAILURE_MARK = "❌"
STATUS_MARK = "⏳"
#: how a handler acknowledges a request: a reaction (quick operations) or a status message
ACKNOWLEDGE_METHODS = frozenset({"setMessageReaction", "sendMessage"})
#: seconds a kill waits for its phase to show activity before firing anyway (phase "any")
ARM_TIMEOUT = 15.0


@dataclass(frozen=True)
class ChaosConfig:
    """What to run: how many jobs and kills, from how many chats, and how long to wait for the end."""

    jobs: int = 200
    kills: int = 5
    seed: int | None = None
    chats: int = 40
    #: sandbox tasks take a random time in this range (seconds)
    task_seconds: tuple[float, float] = (0.3, 2.5)
    #: requests arrive spread over this many seconds (None: long enough to overlap every kill), so kills
    #: also land while updates come in
    send_seconds: float | None = None
    #: seconds of work allowed between a restart and the next kill (random in this range)
    settle: tuple[float, float] = (0.5, 2.5)
    timeout: float = 600.0
    workdir: Path | None = None


@dataclass(frozen=True)
class UserRequest:
    """One message a user sent that asks for a job."""

    chat_id: int
    message_id: int
    operation: str


@dataclass
class ChaosReport:
    """What the run found."""

    jobs: int
    kills: int
    lost: int
    duplicated: int
    stuck: int
    seconds: float
    kill_phases: list[str] = field(default_factory=list)
    #: requests answered twice, by the kill that came after the first answer
    duplicates_by_kill: list[int] = field(default_factory=list)
    delivered: int = 0
    failed_told: int = 0
    duplicate_failures: int = 0
    duplicate_jobs: int = 0
    db_states: dict[str, int] = field(default_factory=dict)
    service_tasks: int = 0
    #: "queued" status messages never tidied away (a request handled again after a kill sends a second one)
    stale_status: int = 0
    clean_exit: bool = False
    workdir: str = ""
    #: what the credit ledger's audit found wrong after the run (bot.credits.audit: empty when it adds up)
    ledger_problems: list[str] = field(default_factory=list)
    #: requests answered but not yet recorded final when a kill came, counted once per kill (the only ones that
    #: may be answered again, once per kill that exposed them)
    exposed: int = 0
    #: extra answers beyond what the kills exposed: a request answered again more often than kills exposed it
    unexplained_duplicates: int = 0

    @property
    def passed(self) -> bool:
        """The goal: nothing lost, nothing stuck, a request answered again only when a kill exposed it."""
        return self.lost == 0 and self.stuck == 0 and self.unexplained_duplicates == 0

    def table(self) -> str:
        """A human-readable summary."""
        phases = ", ".join(f"{phase} {count}" for phase, count in sorted(Counter(self.kill_phases).items()))
        rows = [
            ("jobs requested", self.jobs), ("kills (SIGKILL)", f"{self.kills} ({phases})"),
            ("delivered", self.delivered), ("failed, user told", self.failed_told),
            ("lost (never answered)", self.lost), ("duplicated (extra answers)", self.duplicated),
            ("  by kill", ", ".join(f"{phase} {count}" for phase, count in
                                    zip(self.kill_phases, self.duplicates_by_kill, strict=False))),
            ("  of which failure notices", self.duplicate_failures),
            ("  not exposed by a kill", self.unexplained_duplicates),
            ("exposed at kills (answered, not recorded)", self.exposed),
            ("stuck (not final in the DB)", self.stuck), ("jobs stored twice", self.duplicate_jobs),
            ("job states in the DB", ", ".join(f"{k} {v}" for k, v in sorted(self.db_states.items()))),
            ("service tasks created", self.service_tasks), ("stale status messages", self.stale_status),
            ("clean exit on SIGTERM", self.clean_exit),
            ("ledger problems (audit)", len(self.ledger_problems)),
            ("seconds", f"{self.seconds:.1f}"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value}" for name, value in rows)

    def summary_json(self) -> str:
        """The last line: the figures the README quotes."""
        return json.dumps({"jobs": self.jobs, "kills": self.kills, "lost": self.lost,
                           "duplicated": self.duplicated, "stuck": self.stuck, "seconds": round(self.seconds, 1)})


def chaos_settings(telegram: FakeTelegram, sandbox: Sandbox, database: Path) -> dict[str, str]:
    """The bot's settings for a chaos run: quotas out of the way, INFO logs."""
    return bot_settings(telegram, sandbox, sqlite_url(database), worker_id=WORKER_ID, user_max_active_jobs=100000,
                        free_credits_per_day=100000, log_level="INFO")


class PhaseActivity:
    """Counts, incrementally, the events that fire an armed kill."""

    def __init__(self, telegram: FakeTelegram, sandbox: Sandbox) -> None:
        self._telegram = telegram
        self._sandbox = sandbox
        self._seen_calls = 0
        self._seen_requests = 0
        self._unanswered: list[ApiCall] = []
        self.counts: Counter[str] = Counter()

    def refresh(self) -> None:
        """Look at what arrived since the last look."""
        received = self._sandbox.received
        self._seen_requests = min(self._seen_requests, len(received))  # the sandbox trims its record
        for request in received[self._seen_requests:]:
            if request.method == "POST" and request.path.startswith("/v1/aiart/"):
                self.counts["submit"] += 1
            elif request.method == "GET" and request.path.startswith("/v1/aiart/tasks/"):
                self.counts["poll"] += 1
        self._seen_requests = len(received)
        calls = self._telegram.calls
        self._unanswered.extend(call for call in calls[self._seen_calls:]
                                if call.method in RESULT_METHODS or call.method in ACKNOWLEDGE_METHODS)
        self._seen_calls = len(calls)
        still = []
        for call in self._unanswered:
            if call.status is None:
                still.append(call)
            elif call.status == 200 and call.method in RESULT_METHODS:
                self.counts["deliver"] += 1
            elif call.status == 200 and (call.method == "setMessageReaction"
                                         or str(call.params.get("text", "")).startswith(STATUS_MARK)):
                # a handler acknowledged the request and is about to store the job
                self.counts["intake"] += 1
        self._unanswered = still


class Traffic:
    """Users in many chats sending photos with commands, at a steady rate."""

    def __init__(self, telegram: FakeTelegram, config: ChaosConfig, rng: random.Random) -> None:
        self._telegram = telegram
        self._config = config
        self._rng = rng
        groups = max(1, config.chats // 8)
        users = [User(50_000 + number, f"User{number}") for number in range(config.chats * 2)]
        self._chats: list[tuple[Chat, list[User]]] = [
            (private_chat(user), [user]) for user in users[: config.chats - groups]]
        self._chats += [(group(-1_000_500 - number, f"Group {number}"), users[number::groups][:6])
                        for number in range(groups)]
        self._photos = [samples.jpeg(width, height) for width, height in ((256, 192), (200, 200), (240, 320))]
        self.requests: list[UserRequest] = []
        spread = config.send_seconds if config.send_seconds is not None else max(config.jobs / 50, config.kills * 3.5)
        self._interval = spread / max(1, config.jobs)

    async def send_all(self) -> None:
        """Send every request, spread over time."""
        for number in range(self._config.jobs):
            chat, members = self._chats[number % len(self._chats)]
            operation, caption = self._rng.choice(REQUESTS)
            message = self._telegram.user_sends(chat, self._rng.choice(members),
                                                photo=self._rng.choice(self._photos), caption=caption)
            self.requests.append(UserRequest(chat.id, message["message_id"], operation))
            await asyncio.sleep(self._interval)


@dataclass(frozen=True)
class Answers:
    """How each request was answered, from the fake's records."""

    results: dict[UserRequest, int]
    failures: dict[UserRequest, int]

    @classmethod
    def collect(cls, telegram: FakeTelegram, requests: list[UserRequest]) -> Answers:
        """Count result deliveries (an album counts once) and failure notices replying to each request."""
        results: dict[UserRequest, int] = dict.fromkeys(requests, 0)
        failures: dict[UserRequest, int] = dict.fromkeys(requests, 0)
        by_message = {(request.chat_id, request.message_id): request for request in requests}
        for chat_id in {request.chat_id for request in requests}:
            albums: set[str] = set()
            for message in telegram.sent(chat_id):
                request = by_message.get((chat_id, message.reply_to_message_id))
                if request is None or message.deleted:
                    continue
                if message.media_kind is not None:
                    if message.media_group_id is None or message.media_group_id not in albums:
                        results[request] += 1
                    if message.media_group_id is not None:
                        albums.add(message.media_group_id)
                elif message.text and message.text.startswith(FAILURE_MARK):
                    failures[request] += 1
        return cls(results, failures)

    def answered(self, request: UserRequest) -> bool:
        """Whether the user got a result or was told about a failure."""
        return self.results[request] + self.failures[request] > 0


def read_database(path: Path) -> tuple[dict[str, int], int]:
    """Job counts by state, and how many requests were stored as more than one job."""
    if not path.exists():
        return {}, 0
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        states = dict(connection.execute("SELECT state, count(*) FROM jobs GROUP BY state").fetchall())
        twice = connection.execute(
            "SELECT count(*) FROM (SELECT 1 FROM jobs GROUP BY chat_id, reply_to_message_id "
            "HAVING count(*) > 1)").fetchone()[0]
    except sqlite3.OperationalError:  # the schema is not there yet
        return {}, 0
    finally:
        connection.close()
    return states, int(twice)


async def audit_ledger(database: Path) -> list[str]:
    """The credit ledger's audit of the bot's database: every job charged or refunded as its state says."""
    engine = create_engine(sqlite_url(database))
    try:
        async with session_factory(engine)() as session:
            return await audit(session)
    finally:
        await engine.dispose()


def _active(states: dict[str, int]) -> int:
    return sum(count for state, count in states.items() if state not in FINAL_STATES)


async def run_chaos(config: ChaosConfig, *, say: Callable[[str], None] = print) -> ChaosReport:
    """Run the whole experiment and count what went wrong."""
    seed = config.seed if config.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    say(f"chaos: {config.jobs} jobs, {config.kills} kills, seed {seed}")
    with contextlib.ExitStack() as stack:
        # a killed bot leaves requests half-sent: aiohttp logs each at ERROR, and here they are expected
        server_log = logging.getLogger("aiohttp.server")
        stack.callback(server_log.setLevel, server_log.level)
        server_log.setLevel(logging.CRITICAL)
        workdir = config.workdir or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="chaos-")))
        workdir.mkdir(parents=True, exist_ok=True)
        for stale in workdir.glob("bot.db*"):  # a kept directory from an earlier run
            stale.unlink()
        low, high = config.task_seconds
        async with fakes(task_duration=lambda operation, task_id: rng.uniform(low, high),
                         credits=10 * config.jobs + 1000) as world:
            telegram, sandbox = world.telegram, world.sandbox
            database = workdir / "bot.db"
            bot = BotProcess(chaos_settings(telegram, sandbox, database), workdir, telegram)
            try:
                report = await _experiment(config, rng, telegram, sandbox, bot, database, say)
            except BaseException:
                say(f"chaos: failed; the bot's log is {bot.log_path}")
                raise
            finally:
                await bot.close()
            report.workdir = str(workdir)
            if not report.passed:
                say(f"chaos: the bot's log is {bot.log_path}")
                if config.workdir is None:
                    # keep the evidence: the temporary directory goes away with this block
                    kept = Path(tempfile.mkdtemp(prefix="chaos-kept-"))
                    (kept / "bot.log").write_bytes(bot.log_path.read_bytes())
                    say(f"chaos: log kept at {kept / 'bot.log'}")
    return report


async def _experiment(config: ChaosConfig, rng: random.Random, telegram: FakeTelegram, sandbox: Sandbox,
                      bot: BotProcess, database: Path, say: Callable[[str], None]) -> ChaosReport:
    started = time.monotonic()
    deadline = started + config.timeout
    activity = PhaseActivity(telegram, sandbox)
    traffic = Traffic(telegram, config, rng)
    await bot.start()
    sending = asyncio.create_task(traffic.send_all())
    phases = _kill_plan(config.kills, rng)
    fired: list[tuple[str, float]] = []
    exposed: Counter[UserRequest] = Counter()
    for number, phase in enumerate(phases, start=1):
        await asyncio.sleep(rng.uniform(*config.settle))
        fired.append(await _kill_during(phase, activity, bot))
        await calls_answered(telegram)  # a send the dead bot had under way still counts as answered
        answers = Answers.collect(telegram, traffic.requests)
        exposed.update(await asyncio.to_thread(_unrecorded, database, [r for r in traffic.requests
                                                                     if answers.answered(r)]))
        say(f"  kill {number}/{len(phases)} during {fired[-1][0]} at {fired[-1][1] - started:.1f}s "
            f"({sum(map(answers.answered, traffic.requests))}/{len(traffic.requests)} answered so far)")
        await bot.start()
    await sending
    states: dict[str, int] = {}
    while time.monotonic() < deadline:
        answers = Answers.collect(telegram, traffic.requests)
        states, _ = await asyncio.to_thread(read_database, database)
        if all(map(answers.answered, traffic.requests)) and _active(states) == 0 and states:
            break
        await asyncio.sleep(0.5)
    exit_code = await bot.terminate()
    seconds = time.monotonic() - started
    answers = Answers.collect(telegram, traffic.requests)
    states, twice = await asyncio.to_thread(read_database, database)
    extra_results = sum(max(0, count - 1) for count in answers.results.values())
    extra_answers = sum(max(0, answers.results[r] + answers.failures[r] - 1) for r in traffic.requests)
    duplicated = [r for r in traffic.requests if answers.results[r] + answers.failures[r] > 1]
    ledger_problems = await audit_ledger(database)
    return ChaosReport(ledger_problems=ledger_problems,
        jobs=len(traffic.requests), kills=len(fired), kill_phases=[phase for phase, _ in fired], seconds=seconds,
        duplicates_by_kill=_duplicates_by_kill(telegram, duplicated, fired),
        lost=sum(1 for request in traffic.requests if not answers.answered(request)),
        duplicated=extra_answers, duplicate_failures=extra_answers - extra_results,
        exposed=exposed.total(), unexplained_duplicates=sum(
            max(0, answers.results[r] + answers.failures[r] - 1 - exposed[r]) for r in duplicated),
        stuck=_active(states), db_states=states, duplicate_jobs=twice,
        delivered=sum(1 for count in answers.results.values() if count),
        failed_told=sum(1 for r in traffic.requests if answers.failures[r] and not answers.results[r]),
        service_tasks=len(sandbox.tasks), clean_exit=exit_code == 0,
        stale_status=sum(1 for chat_id in {r.chat_id for r in traffic.requests} for m in telegram.sent(chat_id)
                         if m.text and m.text.startswith(STATUS_MARK) and not m.deleted))


async def calls_answered(telegram: FakeTelegram, timeout: float = 2.0) -> None:
    """Wait (a bounded time) until the fake has finished every call but long polls."""
    with contextlib.suppress(AssertionError):  # one still open after the timeout is left to the count
        await telegram.wait_for(lambda: all(call.status is not None for call in telegram.calls
                                            if call.method != "getUpdates"), timeout)


def _unrecorded(path: Path, answered: list[UserRequest]) -> set[UserRequest]:
    """Of the answered requests, those whose job the (killed) bot had not yet recorded in a final state."""
    final = {state.value for state in FINAL_STATES}
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        rows = connection.execute("SELECT chat_id, reply_to_message_id, state FROM jobs").fetchall()
    finally:
        connection.close()
    recorded = {(chat_id, message_id) for chat_id, message_id, state in rows if state in final}
    return {request for request in answered if (request.chat_id, request.message_id) not in recorded}


def _duplicates_by_kill(telegram: FakeTelegram, duplicated: list[UserRequest],
                        fired: list[tuple[str, float]]) -> list[int]:
    """For each kill, how many requests had a first answer accepted by Telegram shortly before it."""
    first_answer: dict[tuple[int, int], float] = {}
    for call in telegram.calls:
        reply = call.params.get("reply_parameters")
        if not call.ok or call.method not in ANSWER_METHODS or not isinstance(reply, dict):
            continue
        if call.method == "sendMessage" and not str(call.params.get("text", "")).startswith(FAILURE_MARK):
            continue  # a status message, not an answer
        key = (call.params.get("chat_id"), reply.get("message_id"))
        first_answer.setdefault(key, call.time)
    counts = [0] * len(fired)
    for request in duplicated:
        answered_at = first_answer.get((request.chat_id, request.message_id))
        after = [index for index, (_, killed_at) in enumerate(fired)
                 if answered_at is not None and killed_at >= answered_at]
        if after:
            counts[after[0]] += 1
    return counts


def _kill_plan(kills: int, rng: random.Random) -> list[str]:
    """Phases to kill in: every phase before any repeats, in a random order."""
    plan: list[str] = []
    while len(plan) < kills:
        round_ = list(PHASES)
        rng.shuffle(round_)
        plan.extend(round_)
    return plan[:kills]


async def _kill_during(phase: str, activity: PhaseActivity, bot: BotProcess) -> tuple[str, float]:
    """Kill the bot just after the phase shows activity (or after ARM_TIMEOUT, as phase "any"); (phase, when)."""
    activity.refresh()
    before = activity.counts[phase]
    deadline = time.monotonic() + ARM_TIMEOUT
    while True:
        activity.refresh()
        if activity.counts[phase] > before:
            break
        if time.monotonic() > deadline:
            phase = "any"
            break
        await asyncio.sleep(0.002)
    killed_at = time.monotonic()
    await bot.kill()
    return phase, killed_at
