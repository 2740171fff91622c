"""The benchmark's world: the fake Bot API and the sandbox in this process, the real bot in a subprocess.

Both are started by the test harness (tests/harness); this module adds what only the benchmark needs:
the settings every section shares, the sandbox's record of when a finished task was first noticed,
the bot's CPU and memory from /proc, and counting the calls that delivered results. The bot runs as its
own process (`python -m bot`, every setting from its environment), so its memory and CPU can be read
from /proc without counting the fakes, and the fakes' work does not slow the bot's event loop.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

from bot.sandbox import Sandbox
from bot.sandbox.state import SandboxTask
from tests.fakes.telegram import FakeTelegram
from tests.harness import BotProcess, bot_settings, fakes, running_process, wait_until

__all__ = ["NOT_PER_JOB", "RESULT_METHODS", "BotProcess", "NoticeLog", "OkCounter", "ProcStats", "bot_env",
           "count_ok", "running_process", "running_replicas", "wait_until", "world"]

WORKER_ID = "bench-worker"
#: methods whose success means a result reached the chat
RESULT_METHODS = frozenset({"sendPhoto", "sendDocument", "sendMediaGroup"})
#: calls that do not count as the jobs' Telegram traffic (every call but these counts; start-up calls
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


def bot_env(telegram: FakeTelegram, sandbox: Sandbox, database_url: str, **extra: object) -> dict[str, str]:
    """Settings for a bot wired to this world: every request may queue, quotas out of the way."""
    return bot_settings(telegram, sandbox, database_url, **{
        "worker_id": WORKER_ID, "log_level": "WARNING", "user_max_active_jobs": 1000000,
        "free_credits_per_day": 1000000, "job_deadline_s": 3600, **extra})


@contextlib.asynccontextmanager
async def world(*, rate_limits: bool = False, task_seconds: float = 0.0,
                task_duration: Callable[[str, str], float] | None = None,
                task_duration_by_size: Callable[[str, str, int | None], float] | None = None,
                ) -> AsyncIterator[tuple[FakeTelegram, Sandbox]]:
    """A started fake Bot API and sandbox (plenty of credits, finished tasks' notice times kept), stopped afterwards."""
    async with fakes(rate_limits=rate_limits, task_seconds=task_seconds, task_duration=task_duration,
                     task_duration_by_size=task_duration_by_size, credits=10**9) as started:
        started.sandbox.state.tasks = NoticeLog()  # before the first task
        yield started.telegram, started.sandbox


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


@contextlib.asynccontextmanager
async def running_replicas(env: dict[str, str], workdir: Path, telegram: FakeTelegram, count: int,
                           first: dict[str, str] | None = None) -> AsyncIterator[list[BotProcess]]:
    """`count` bot processes on one database (one polls, the others wait for its lock), each with its own
    worker id and directory, the first with the `first` settings too; one alone is `running_process` in
    `workdir` itself."""
    if count == 1:
        async with running_process({**env, **(first or {})}, workdir, telegram) as bot:
            yield [bot]
        return
    bots = [BotProcess({**env, **(first or {} if number == 0 else {}),
                        "WORKER_ID": f"{env.get('WORKER_ID', WORKER_ID)}-{number}"}, workdir / f"r{number}",
                       telegram) for number in range(count)]
    try:
        await bots[0].start()
        for bot in bots[1:]:
            await bot.start_replica()
        yield bots
    finally:
        for bot in bots:
            await bot.close()
