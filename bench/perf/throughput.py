"""Throughput: many jobs with instant tasks and no flood limits, end to end, and the Telegram calls each costs."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from bench.perf.world import (
    NOT_PER_JOB,
    RESULT_METHODS,
    OkCounter,
    ProcStats,
    bot_env,
    running_process,
    running_replicas,
    wait_until,
    world,
)
from tests.fakes import samples
from tests.fakes.telegram import User, private_chat

#: the request every job makes: a small photo to upscale (BASE64 hand-over, one result photo)
CAPTION = "/upscale 2"


@dataclass(frozen=True)
class ThroughputResult:
    """What one throughput run measured."""

    jobs: int
    seconds: float
    jobs_per_s: float
    tg_calls_per_job: float
    calls_by_method: dict[str, int]
    bot_cpu_s: float
    bot_peak_rss_mb: float


async def run_throughput(jobs: int, database_url: str, workdir: Path, *, chats: int = 100,
                         timeout: float = 600.0, replicas: int = 1) -> ThroughputResult:
    """Send `jobs` requests from `chats` private chats at once; time until the last result is delivered
    (by `replicas` bot processes on one database; their CPU and peak memory added up)."""
    photo = samples.jpeg(64, 48)
    async with world(task_seconds=0.0) as (telegram, sandbox):
        env = bot_env(telegram, sandbox, database_url, telegram_rate_limit="false")
        async with running_replicas(env, workdir, telegram, replicas) as bots:
            bot = bots[0]
            first_call = len(telegram.calls)
            users = [User(5000 + index, f"User{index}") for index in range(chats)]
            cpu_before = sum(ProcStats(each.pid).cpu_seconds() for each in bots)
            started = time.monotonic()
            for index in range(jobs):
                user = users[index % chats]
                telegram.user_sends(private_chat(user), user, photo=photo, caption=CAPTION)
            results = OkCounter(telegram, RESULT_METHODS, first_call)
            await wait_until(lambda: results() >= jobs, timeout,
                             f"{jobs} results", bot, every=0.02)
            seconds = time.monotonic() - started
            cpu = sum(ProcStats(each.pid).cpu_seconds() for each in bots) - cpu_before
            peak = sum(ProcStats(each.pid).memory_mb("VmHWM") for each in bots)
            # the status messages are tidied after each result: let the last ones land before counting
            settle_until = time.monotonic() + 5.0
            while time.monotonic() < settle_until:
                before = len(telegram.calls)
                await asyncio.sleep(0.3)
                if len(telegram.calls) == before:
                    break
    by_method: dict[str, int] = {}
    for call in telegram.calls[first_call:]:
        if call.method not in NOT_PER_JOB:
            by_method[call.method] = by_method.get(call.method, 0) + 1
    return ThroughputResult(jobs=jobs, seconds=seconds, jobs_per_s=jobs / seconds,
                            tg_calls_per_job=sum(by_method.values()) / jobs, calls_by_method=by_method,
                            bot_cpu_s=cpu, bot_peak_rss_mb=peak)


#: the slow request: text to image (a status message, not a reaction), whose task runs SLOW_TASK_S
SLOW_TEXT = "/imagine anime a lighthouse at dawn"
SLOW_TASK_S = 12.0


async def run_slow_calls(jobs: int, database_url: str, workdir: Path, *, timeout: float = 300.0) -> float:
    """Telegram calls per slow job: `jobs` /imagine requests from as many chats, each task taking SLOW_TASK_S."""
    async with world(task_seconds=SLOW_TASK_S) as (telegram, sandbox):
        env = bot_env(telegram, sandbox, database_url, telegram_rate_limit="false")
        async with running_process(env, workdir, telegram) as bot:
            first_call = len(telegram.calls)
            users = [User(7000 + index, f"Slow{index}") for index in range(jobs)]
            for user in users:
                telegram.user_sends(private_chat(user), user, text=SLOW_TEXT)
            results = OkCounter(telegram, RESULT_METHODS, first_call)
            await wait_until(lambda: results() >= jobs, timeout, f"{jobs} slow results", bot, every=0.1)
            await asyncio.sleep(1.0)  # the last status messages are tidied after their results
    calls = [call for call in telegram.calls[first_call:] if call.method not in NOT_PER_JOB]
    return len(calls) / jobs
