"""Polling: status checks per task and the delay to notice completion, for heavy-tailed task durations.

Durations are log-normal with median 8 s and 95th percentile 40 s (σ = ln 5 / 1.645), drawn once
from a seed and replayed, in order of task creation, for each policy: the bot's adaptive schedule,
fixed 2-second polling (the provider SDK's default) and fixed 5-second polling. The sandbox runs
tasks `scale` times as long (0.05: a median task takes 0.4 s) and the bot's poll delays are scaled
the same way through POLL_TIME_SCALE, so every figure converts back to unscaled seconds. Requests
arrive as a Poisson stream, from many chats, with Telegram limits off (this measures polling only).
"""

from __future__ import annotations

import asyncio
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.perf.world import BOTMAIN, RESULT_METHODS, NoticeLog, OkCounter, bot_env, running_bot, wait_until, world
from tests.fakes import samples
from tests.fakes.telegram import User, private_chat

MEDIAN_S = 8.0
P95_S = 40.0
SIGMA = math.log(P95_S / MEDIAN_S) / 1.6448536
CAPTION = "/upscale 2"
POLICIES = ("adaptive", "fixed:2", "fixed:5")


@dataclass(frozen=True)
class PollingResult:
    """One policy's figures, in unscaled seconds."""

    policy: str
    tasks: int
    polls_per_task: float
    lag_p50_s: float
    lag_p95_s: float
    lag_max_s: float
    #: the bot's CPU use over the run, in percent of one core (a busy bot checks late whatever the policy)
    bot_cpu_pct: float
    #: (duration, status checks, lag, check ages) per task, unscaled, for a closer look
    details: list[tuple[float, int, float, list[float]]] = field(default_factory=list, repr=False, compare=False)


class DurationReplay:
    """Hands out the same drawn durations (scaled) to tasks in the order the sandbox creates them."""

    def __init__(self, durations: list[float], scale: float) -> None:
        self._durations = durations
        self._scale = scale
        self.assigned: dict[str, float] = {}

    def __call__(self, operation: str, task_id: str) -> float:
        duration = self._durations[len(self.assigned) % len(self._durations)]
        self.assigned[task_id] = duration
        return duration * self._scale


def draw_durations(count: int, seed: int) -> list[float]:
    """Log-normal task durations in seconds (median 8, 95th percentile 40)."""
    rng = random.Random(seed)
    return [rng.lognormvariate(math.log(MEDIAN_S), SIGMA) for _ in range(count)]


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


async def run_policy(policy: str, durations: list[float], *, scale: float, arrivals_per_s: float, seed: int,
                     workdir: Path, chats: int = 60, database_url: str | None = None) -> PollingResult:
    """Run every duration through the bot with one poll policy."""
    replay = DurationReplay(durations, scale)
    photo = samples.jpeg(64, 48)
    rng = random.Random(seed)
    async with world(task_duration=replay) as (telegram, sandbox):
        env = bot_env(telegram, sandbox, database_url or f"sqlite+aiosqlite:///{workdir}/bot.db", telegram_rate_limit="false",
                      poll_policy=policy, poll_time_scale=scale)
        async with running_bot(telegram, env, workdir, BOTMAIN) as bot:
            first_call = len(telegram.calls)
            cpu_before, started = bot.stats.cpu_seconds(), time.monotonic()
            users = [User(7000 + index, f"Poller{index}") for index in range(chats)]
            next_at = time.monotonic()
            for index in range(len(durations)):
                next_at += rng.expovariate(arrivals_per_s)
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                user = users[index % chats]
                telegram.user_sends(private_chat(user), user, photo=photo, caption=CAPTION)
            longest = max(durations) * scale
            results = OkCounter(telegram, RESULT_METHODS, first_call)
            await wait_until(lambda: results() >= len(durations),
                             longest * 3 + 60.0, f"{len(durations)} results ({policy})", bot)
            cpu_pct = 100.0 * (bot.stats.cpu_seconds() - cpu_before) / (time.monotonic() - started)
    tasks = sandbox.state.tasks
    assert isinstance(tasks, NoticeLog)
    details = [(replay.assigned[task_id], task.polls, (tasks.noticed[task_id] - task.completed_at) / scale,
                [round((at - task.created_at) / scale, 2) for at in tasks.checks.get(task_id, [])])
               for task_id, task in tasks.items()
               if task_id in tasks.noticed and task.completed_at is not None and task_id in replay.assigned]
    lags = [lag for _, _, lag, _ in details]
    polls = [task.polls for task in tasks.values()]
    return PollingResult(policy=policy, tasks=len(polls), polls_per_task=sum(polls) / max(1, len(polls)),
                         lag_p50_s=percentile(lags, 0.5), lag_p95_s=percentile(lags, 0.95), lag_max_s=max(lags),
                         bot_cpu_pct=cpu_pct, details=details)


async def run_polling(tasks: int, *, scale: float, arrivals_per_s: float, seed: int,
                      workdir: Path) -> dict[str, PollingResult]:
    """The three policies over the same durations, one bot run each."""
    durations = draw_durations(tasks, seed)
    results = {}
    for index, policy in enumerate(POLICIES):
        results[policy] = await run_policy(policy, durations, scale=scale, arrivals_per_s=arrivals_per_s,
                                           seed=seed, workdir=workdir / f"poll-{index}")
    return results
