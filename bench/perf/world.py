"""The benchmark's world: the fake Bot API and the sandbox in this process, the real bot in a subprocess.

The bot runs as its own process (`python -m bot`, every setting from its environment), so its memory
and CPU can be read from /proc without counting the fakes, and the fakes' work does not slow the bot's
event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from bot.sandbox import Sandbox, SandboxConfig
from bot.sandbox.state import SandboxTask
from tests.fakes.telegram import FakeTelegram

ROOT = Path(__file__).resolve().parents[2]
SERVICE_KEY = "bench-service-key-0123456789abcdef"
WORKER_ID = "bench-worker"
#: the bot's entry point: `python -m bot` (kept as a name for the sections that pass it explicitly)
BOTMAIN = ("-m", "bot")
#: methods whose success means a result reached the chat
RESULT_METHODS = frozenset({"sendPhoto", "sendDocument", "sendMediaGroup"})
#: calls that do not count as the jobs' Telegram traffic (issue 5: every call but these; start-up calls
#: come before the measured part anyway)
NOT_PER_JOB = frozenset({"getUpdates", "getFile"})
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class NoticeLog(dict[str, SandboxTask]):
    """The sandbox's task table, noting when a status check first finds each task finished.

    The sandbox finishes a task on its own at its due time; the bot learns of it only on its next
    status check. The first check that sees status 1 (or that finishes it, when the check lands
    in the same instant) is the notice time the lag is measured to.
    """

    def __init__(self) -> None:
        super().__init__()
        self.noticed: dict[str, float] = {}
        self.checks: dict[str, list[float]] = {}

    def get(self, key: str, default: SandboxTask | None = None) -> SandboxTask | None:  # type: ignore[override]
        task = super().get(key, default)
        now = time.monotonic()
        if task is not None:
            self.checks.setdefault(key, []).append(now)
        if task is not None and key not in self.noticed:
            ready = task.status == 0 and task.outcome is not None and now >= task.due_at
            if task.status == 1 or ready:
                self.noticed[key] = now
        return task


@dataclass
class ProcStats:
    """CPU seconds and memory of a process, read from /proc."""

    pid: int

    def cpu_seconds(self) -> float:
        """User plus system CPU time so far."""
        with open(f"/proc/{self.pid}/stat") as stat:
            fields = stat.read().rpartition(")")[2].split()
        # after the command name: state is field 3, utime and stime are fields 14 and 15
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS

    def memory_mb(self, key: str = "VmRSS") -> float:
        """A /proc/<pid>/status memory figure (VmRSS now, VmHWM peak) in MiB."""
        with open(f"/proc/{self.pid}/status") as status:
            match = re.search(rf"^{key}:\s+(\d+) kB", status.read(), re.MULTILINE)
        return int(match.group(1)) / 1024 if match else 0.0


@dataclass
class BotProcess:
    """The bot as a subprocess with its own environment and log file."""

    env: dict[str, str]
    workdir: Path
    #: python arguments after the interpreter: the module or script to run
    entry: tuple[str, ...] = ("-m", "bot")
    process: asyncio.subprocess.Process | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.workdir / "bot.log"

    @property
    def stats(self) -> ProcStats:
        """/proc readings of the running bot."""
        if self.process is None:
            raise RuntimeError("the bot is not running")
        return ProcStats(self.process.pid)

    async def start(self, telegram: FakeTelegram, timeout: float = 60.0) -> None:
        """Start the bot and wait until it asks the fake Bot API for updates."""
        polls_before = sum(1 for call in telegram.calls if call.method == "getUpdates")
        env = {**os.environ, **self.env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
        with open(self.log_path, "ab") as log:
            # cwd is the run's own directory: the repository's .env, if any, must not leak into the run
            self.process = await asyncio.create_subprocess_exec(sys.executable, *self.entry, cwd=self.workdir, env=env,
                                                                stdout=log, stderr=log)
        deadline = time.monotonic() + timeout
        while sum(1 for call in telegram.calls if call.method == "getUpdates") <= polls_before:
            if self.process.returncode is not None:
                raise RuntimeError(f"the bot exited at start-up (code {self.process.returncode}):\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the bot did not start within {timeout:.0f}s:\n{self.log_tail()}")
            await asyncio.sleep(0.05)

    async def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM, then SIGKILL if it does not finish in time."""
        if self.process is None or self.process.returncode is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(self.process.wait(), timeout)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    def log_tail(self, lines: int = 40) -> str:
        """The end of the bot's log, for error messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


def bot_env(telegram: FakeTelegram, sandbox: Sandbox, database_url: str, **extra: object) -> dict[str, str]:
    """Settings for a bot wired to this world: every request may queue, quotas out of the way."""
    env = {
        "TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_API_URL": telegram.url,
        "AIART_API_KEY": SERVICE_KEY, "AIART_BASE_URL": sandbox.base_url, "AIART_STATIC_URL": sandbox.static_url,
        "DATABASE_URL": database_url, "WORKER_ID": WORKER_ID, "LOG_LEVEL": "WARNING",
        "USER_MAX_ACTIVE_JOBS": "1000000", "USER_MAX_JOBS_PER_DAY": "1000000", "JOB_DEADLINE_S": "3600",
    }
    env.update({name.upper(): str(value) for name, value in extra.items()})
    return env


@contextlib.asynccontextmanager
async def world(*, rate_limits: bool = False, task_seconds: float = 0.0,
                task_duration: Callable[[str, str], float] | None = None) -> AsyncIterator[tuple[FakeTelegram, Sandbox]]:
    """A started fake Bot API and sandbox (plenty of credits), stopped afterwards."""
    sandbox = Sandbox(SandboxConfig(api_key=SERVICE_KEY, task_seconds=task_seconds, task_duration=task_duration,
                                    credits=10**9))
    sandbox.state.tasks = NoticeLog()
    telegram = FakeTelegram(rate_limits=rate_limits)
    await sandbox.start()
    await telegram.start()
    try:
        yield telegram, sandbox
    finally:
        await telegram.stop()
        await sandbox.stop()


@contextlib.asynccontextmanager
async def running_bot(telegram: FakeTelegram, env: Mapping[str, str], workdir: Path,
                      entry: tuple[str, ...] = ("-m", "bot")) -> AsyncIterator[BotProcess]:
    """The bot running against `telegram` until the block ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    bot = BotProcess(dict(env), workdir, entry)
    await bot.start(telegram)
    try:
        yield bot
    finally:
        await bot.stop()


def count_ok(telegram: FakeTelegram, methods: frozenset[str], since: int = 0) -> int:
    """Successful calls of `methods` among the calls from index `since` on."""
    calls = telegram.calls
    return sum(1 for index in range(since, len(calls)) if calls[index].status == 200 and calls[index].method in methods)


class OkCounter:
    """count_ok that only looks at new and still unanswered calls each time (long runs poll it often)."""

    def __init__(self, telegram: FakeTelegram, methods: frozenset[str], since: int = 0) -> None:
        self._telegram = telegram
        self._methods = methods
        self._settled = since  # every call before this index is answered and counted
        self._count = 0

    def __call__(self) -> int:
        calls = self._telegram.calls
        while self._settled < len(calls):
            call = calls[self._settled]
            if call.status is None and call.method in self._methods:
                break  # its answer is still to come
            if call.status == 200 and call.method in self._methods:
                self._count += 1
            self._settled += 1
        return self._count + count_ok(self._telegram, self._methods, self._settled)


async def wait_until(predicate: Callable[[], bool], timeout: float, what: str, bot: BotProcess | None = None,
                     every: float = 0.05) -> None:
    """Poll `predicate`; RuntimeError naming `what` (with the bot's log tail) if it stays false."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if bot is not None and bot.process is not None and bot.process.returncode is not None:
            raise RuntimeError(f"the bot died while waiting for {what}:\n{bot.log_tail()}")
        if time.monotonic() > deadline:
            tail = f"\n{bot.log_tail()}" if bot is not None else ""
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}{tail}")
        await asyncio.sleep(every)
