"""Polling: status checks per task and the delay to notice completion, for heavy-tailed task durations.

Over the run, durations are log-normal with median 8 s and 95th percentile 40 s (σ = ln 5 / 1.645
≈ 0.98). As with a real service, most of that spread is explained by the request (scenario
"sized", the default, which the JSON figures come from): each request is one of /upscale 2,
/colorize and /restore on a 4:3 photo of its own size, and its task takes

    8 s × operation factor × (megapixels / 0.3) × e^ε,   ε ~ N(0, 0.3²)

with operation factors 1, 0.8 and 1.25 (equally likely) and megapixels log-normal around 0.3
(σ_size ≈ 0.91, clipped to 0.02..3 MP), so that the factors, the size and the noise together keep
the overall log-normal (0.30² + 0.18² + 0.91² ≈ 0.98²). Work linear in pixels is what upscaling,
colorizing and restoring do; the within-class noise σ = 0.3 (90% of one operation's tasks on one
size within ×0.6..×1.6 of their median) stands for queueing and load on the provider's side, which
the request cannot tell. Scenario "independent" keeps the older set-up: one /upscale 2 on a 64×48
photo and durations drawn independently of everything (only the marginal can be learned).

Durations are drawn once from a seed and replayed for each policy: the bot's adaptive schedule,
fixed 2-second polling (the provider SDK's default) and fixed 5-second polling. Sized tasks get
theirs by (operation, input pixels), unique per request, so each request takes the same time under
every policy whatever order the sandbox sees them in. The sandbox runs tasks `scale` times as long
(0.1: a median task takes 0.8 s) and the bot's poll delays are scaled the same way through
POLL_TIME_SCALE, so every figure converts back to unscaled seconds. Requests arrive as a Poisson
stream, from many chats, with Telegram limits off (this measures polling only).

    python -m bench.perf.polling [--scenario sized|independent] [--tasks 100] [--seed 5]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import math
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.perf.latency import percentile
from bench.perf.world import (
    RESULT_METHODS,
    NoticeLog,
    OkCounter,
    ProcStats,
    bot_env,
    running_process,
    wait_until,
    world,
)
from bot.sandbox.callbacks import CallbackFaults
from tests.fakes import samples
from tests.fakes.telegram import User, private_chat
from tests.harness import free_port

MEDIAN_S = 8.0
P95_S = 40.0
SIGMA = math.log(P95_S / MEDIAN_S) / 1.6448536
CAPTION = "/upscale 2"
POLICIES = ("adaptive", "fixed:2", "fixed:5", "adaptive+cb", "adaptive+cb-lossy")
#: the share of service callbacks the sandbox loses in the "-lossy" run
LOSSY_SHARE = 0.1
CALLBACK_PATH = "/aiart/bench-callbacks"
SCENARIOS = ("sized", "independent")

#: (caption, the sandbox's operation name, duration factor) of the sized scenario's operations
OPERATIONS = (("/upscale 2", "imgupscale", 1.0), ("/colorize", "colorize", 0.8), ("/restore", "restoration", 1.25))
#: log-space spread of one operation's durations on one input size
WITHIN_SIGMA = 0.3
MEDIAN_MEGAPIXELS = 0.3
MIN_MEGAPIXELS, MAX_MEGAPIXELS = 0.02, 3.0
_OPERATION_VARIANCE = sum(math.log(factor) ** 2 for _, _, factor in OPERATIONS) / len(OPERATIONS)
SIZE_SIGMA = math.sqrt(SIGMA ** 2 - WITHIN_SIGMA ** 2 - _OPERATION_VARIANCE)


@dataclass(frozen=True)
class Request:
    """One request of a run: what the user sends, and how long its task takes (unscaled seconds)."""

    caption: str
    operation: str
    width: int
    height: int
    duration: float

    @property
    def pixels(self) -> int:
        """The input's pixel count."""
        return self.width * self.height


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


class SizedReplay:
    """Gives each task its request's drawn duration (scaled), found by operation and input pixels."""

    def __init__(self, requests: list[Request], scale: float) -> None:
        self._by_size: dict[str, list[tuple[int, float]]] = {}
        for request in requests:
            self._by_size.setdefault(request.operation, []).append((request.pixels, request.duration))
        for entries in self._by_size.values():
            entries.sort()
        self._scale = scale
        self.assigned: dict[str, float] = {}
        #: tasks whose input size matched no request exactly (the bot resized it): the nearest was used
        self.unmatched = 0

    def __call__(self, operation: str, task_id: str, input_pixels: int | None) -> float:
        entries = self._by_size[operation]
        index = min(bisect.bisect_left(entries, (input_pixels or 0, -math.inf)), len(entries) - 1)
        if index > 0 and abs(entries[index - 1][0] - (input_pixels or 0)) < abs(entries[index][0] - (input_pixels or 0)):
            index -= 1
        pixels, duration = entries[index]
        self.unmatched += pixels != input_pixels
        self.assigned[task_id] = duration
        return duration * self._scale


def draw_durations(count: int, seed: int) -> list[float]:
    """Log-normal task durations in seconds (median 8, 95th percentile 40), independent of the request."""
    rng = random.Random(seed)
    return [rng.lognormvariate(math.log(MEDIAN_S), SIGMA) for _ in range(count)]


def draw_requests(count: int, seed: int) -> list[Request]:
    """Requests of the sized scenario: operation, a unique input size, and the task's duration."""
    rng = random.Random(seed)
    requests: list[Request] = []
    taken: set[tuple[str, int]] = set()
    while len(requests) < count:
        caption, operation, factor = rng.choice(OPERATIONS)
        megapixels = min(MAX_MEGAPIXELS, max(MIN_MEGAPIXELS, rng.lognormvariate(math.log(MEDIAN_MEGAPIXELS), SIZE_SIGMA)))
        width = round(math.sqrt(megapixels * 1e6 * 4 / 3))
        height = round(width * 3 / 4)
        noise = rng.gauss(0.0, WITHIN_SIGMA)
        while (operation, width * height) in taken:  # a size already used: one pixel wider keeps it unique
            width += 1
        taken.add((operation, width * height))
        duration = MEDIAN_S * factor * (width * height / 1e6 / MEDIAN_MEGAPIXELS) * math.exp(noise)
        requests.append(Request(caption, operation, width, height, duration))
    return requests


def independent_requests(count: int, seed: int) -> list[Request]:
    """Requests of the independent scenario: the same small /upscale 2 photo, durations drawn apart."""
    return [Request(CAPTION, "imgupscale", 64, 48, duration) for duration in draw_durations(count, seed)]


async def run_policy(policy: str, requests: list[Request], *, scale: float, arrivals_per_s: float, seed: int,
                     workdir: Path, sized: bool = True, chats: int = 60, database_url: str | None = None,
                     photos: dict[tuple[int, int], bytes] | None = None) -> PollingResult:
    """Run every request through the bot with one poll policy."""
    durations = [request.duration for request in requests]
    replay: SizedReplay | DurationReplay = SizedReplay(requests, scale) if sized else DurationReplay(durations, scale)
    photos = photos if photos is not None else make_photos(requests)
    rng = random.Random(seed)
    base_policy, _, callbacks = policy.partition("+")
    timing = ({"task_duration_by_size": replay} if isinstance(replay, SizedReplay) else {"task_duration": replay})
    async with world(**timing) as (telegram, sandbox):
        extra: dict[str, object] = {}
        if callbacks:
            # the service calls the bot back when a task ends (the sandbox, on loopback), some lost when lossy
            port = free_port()
            extra = {"aiart_webhook_path": CALLBACK_PATH, "http_port": port}
            sandbox.config.webhook_url = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
            sandbox.config.webhook_faults = CallbackFaults(lost=LOSSY_SHARE if callbacks.endswith("lossy") else 0.0,
                                                           seed=seed)
        env = bot_env(telegram, sandbox, database_url or f"sqlite+aiosqlite:///{workdir}/bot.db", telegram_rate_limit="false",
                      poll_policy=base_policy, poll_time_scale=scale, **extra)
        async with running_process(env, workdir, telegram) as bot:
            first_call = len(telegram.calls)
            cpu_before, started = ProcStats(bot.pid).cpu_seconds(), time.monotonic()
            users = [User(7000 + index, f"Poller{index}") for index in range(chats)]
            next_at = time.monotonic()
            for index, request in enumerate(requests):
                next_at += rng.expovariate(arrivals_per_s)
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                user = users[index % chats]
                telegram.user_sends(private_chat(user), user, photo=photos[request.width, request.height],
                                    caption=request.caption)
            longest = max(durations) * scale
            results = OkCounter(telegram, RESULT_METHODS, first_call)
            await wait_until(lambda: results() >= len(durations),
                             longest * 3 + 60.0, f"{len(durations)} results ({policy})", bot)
            cpu_pct = 100.0 * (ProcStats(bot.pid).cpu_seconds() - cpu_before) / (time.monotonic() - started)
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


def make_photos(requests: list[Request]) -> dict[tuple[int, int], bytes]:
    """One JPEG per input size the requests use."""
    return {(request.width, request.height): samples.jpeg(request.width, request.height, quality=80)
            for request in requests}


async def run_polling(tasks: int, *, scale: float, arrivals_per_s: float, seed: int, workdir: Path,
                      scenario: str = "sized") -> dict[str, PollingResult]:
    """The three policies over the same requests and durations, one bot run each."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown polling scenario {scenario!r}")
    sized = scenario == "sized"
    requests = draw_requests(tasks, seed) if sized else independent_requests(tasks, seed)
    photos = make_photos(requests)
    results = {}
    for index, policy in enumerate(POLICIES):
        results[policy] = await run_policy(policy, requests, scale=scale, arrivals_per_s=arrivals_per_s, seed=seed,
                                           workdir=workdir / f"poll-{index}", sized=sized, photos=photos)
    return results


def main() -> None:
    """Run the polling section alone, in either scenario, and print each policy's figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=SCENARIOS, default="sized")
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--scale", type=float, default=0.1)
    parser.add_argument("--arrivals", type=float, default=3.0, help="requests per (real) second")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-polling-") as workdir:
        results = asyncio.run(run_polling(options.tasks, scale=options.scale, arrivals_per_s=options.arrivals,
                                          seed=options.seed, workdir=Path(workdir), scenario=options.scenario))
    print(f"polling, {options.scenario} durations, {options.tasks} tasks, seed {options.seed}; unscaled seconds")
    for policy, result in results.items():
        print(f"  {policy:<9} polls/task {result.polls_per_task:5.2f}   lag p50 {result.lag_p50_s:5.2f} s   "
              f"p95 {result.lag_p95_s:5.2f} s   max {result.lag_max_s:6.2f} s   (bot CPU {result.bot_cpu_pct:.0f}%)")


if __name__ == "__main__":
    main()
