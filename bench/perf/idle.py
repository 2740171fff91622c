"""Waiting work: the bot's memory and CPU while 10,000 jobs sit in its queue.

The jobs are written straight into the database before the bot starts (through the store's own
migrations and table, as rows the bot itself would have written): running tasks not due for a
status check for an hour, from many chats. Then the bot runs with them for a while: a design that
keeps a coroutine or an object per waiting job, or rescans every job on each loop, shows up here.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.perf.world import ProcStats, bot_env, running_process, world
from bot.store import create_engine, migrate
from bot.store.models import jobs_table
from bot.store.records import JobState


@dataclass(frozen=True)
class IdleResult:
    """The bot's footprint with the queue full."""

    jobs: int
    seconds: float
    rss_mb: float
    peak_rss_mb: float
    cpu_pct: float
    baseline_rss_mb: float
    baseline_cpu_pct: float


async def seed_waiting_jobs(database_url: str, count: int, *, chats: int = 2000) -> None:
    """`count` running jobs whose next status check is an hour away."""
    await migrate(database_url)
    engine = create_engine(database_url)
    now = datetime.now(UTC)
    rows = [{
        "chat_id": 10_000 + index % chats, "user_id": 10_000 + index % chats, "chat_type": "private",
        "reply_to_message_id": index + 1, "status_message_id": None, "operation": "upscale",
        "args": {"factor": 2}, "inputs": [f"file-{index}"], "task_id": f"{index:032x}",
        "state": JobState.RUNNING, "attempts": 1, "next_check_at": now + timedelta(hours=1, seconds=index % 600),
        "deadline_at": now + timedelta(hours=2), "lease_owner": None, "lease_until": None, "result_urls": [],
        "error": None, "sent_message_ids": [], "created_at": now, "updated_at": now, "submitted_at": now,
        "finished_at": None,
    } for index in range(count)]
    try:
        async with engine.begin() as connection:
            for start in range(0, count, 1000):
                await connection.execute(jobs_table.insert(), rows[start:start + 1000])
    finally:
        await engine.dispose()


async def measure(cpu_seconds: Callable[[], float], seconds: float) -> float:
    """CPU use, in percent of one core, over `seconds`."""
    before, started = cpu_seconds(), time.monotonic()
    await asyncio.sleep(seconds)
    return 100.0 * (cpu_seconds() - before) / (time.monotonic() - started)


async def run_idle(jobs: int, workdir: Path, *, seconds: float = 20.0, settle: float = 5.0) -> IdleResult:
    """Footprint with an empty queue, then with `jobs` waiting; CPU over `seconds` after `settle`."""
    async with world() as (telegram, sandbox):
        empty_dir, full_dir = workdir / "empty", workdir / "full"
        empty_dir.mkdir(parents=True, exist_ok=True)
        full_dir.mkdir(parents=True, exist_ok=True)
        baseline_url = f"sqlite+aiosqlite:///{empty_dir}/bot.db"
        async with running_process(bot_env(telegram, sandbox, baseline_url), empty_dir, telegram) as bot:
            await asyncio.sleep(settle)
            baseline_cpu = await measure(ProcStats(bot.pid).cpu_seconds, seconds)
            baseline_rss = ProcStats(bot.pid).memory_mb()
        full_url = f"sqlite+aiosqlite:///{full_dir}/bot.db"
        await seed_waiting_jobs(full_url, jobs)
        async with running_process(bot_env(telegram, sandbox, full_url), full_dir, telegram) as bot:
            await asyncio.sleep(settle)
            cpu = await measure(ProcStats(bot.pid).cpu_seconds, seconds)
            rss, peak = ProcStats(bot.pid).memory_mb(), ProcStats(bot.pid).memory_mb("VmHWM")
    return IdleResult(jobs=jobs, seconds=seconds, rss_mb=rss, peak_rss_mb=peak, cpu_pct=cpu,
                      baseline_rss_mb=baseline_rss, baseline_cpu_pct=baseline_cpu)
