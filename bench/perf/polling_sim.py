"""The polling section replayed without the bot, over many seeds, against a schedule that knows every task.

The bench's polling section runs the bot for minutes per policy, and its figures move with the
machine, so one seed tells little about a schedule. This replays the same requests
(`draw_requests`, the same Poisson arrivals) through a schedule in simulated time, each check
costing a fixed `overhead` (the bot's own delay), so that many seeds take seconds. Besides the
adaptive schedule and fixed 2 s / 5 s polling it runs an *oracle*: the same hazard rule handed each
task's true duration distribution (its operation's factor, its size, σ 0.3) instead of learning it.
No schedule that learns from finished tasks knows more, so the oracle shows where the targets sit:
on a seed they are met when a schedule checks less often than fixed 5 s and its p95 delay is at
most fixed 2 s's plus 0.25 s.

    python -m bench.perf.polling_sim [--first-seed 10] [--seeds 90] [--each]
"""

from __future__ import annotations

import argparse
import heapq
import math
import random
import statistics
from dataclasses import dataclass

from bench.perf.polling import MEDIAN_MEGAPIXELS, MEDIAN_S, OPERATIONS, WITHIN_SIGMA, Request, draw_requests, percentile
from bot.jobs.polling import DurationModel, PollSchedule
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue

#: the bot's own delay per check, in unscaled seconds (fixed 2 s polling notices at p95 ≈ 1.95 s in the bench)
OVERHEAD_S = 0.05
#: the bench's arrivals: 3 a second at time scale 0.1
ARRIVALS_PER_S, SCALE = 3.0, 0.1
TASKS = 300
LAG_ALLOWANCE_S = 0.25
_FACTORS = {operation: factor for _, operation, factor in OPERATIONS}


def command_of(caption: str) -> str:
    """The bot's operation name for a request's caption ("/upscale 2" → "upscale")."""
    return caption.split()[0].lstrip("/")


class OracleSchedule(PollSchedule):
    """The adaptive schedule's rule, given each task's true duration distribution instead of learning it."""

    def __init__(self, requests: list[Request], **settings: object) -> None:
        super().__init__(**settings)  # type: ignore[arg-type]
        self._truth = {(command_of(r.caption), r.pixels): math.log(MEDIAN_S * _FACTORS[r.operation] * r.pixels / 1e6
                                                         / MEDIAN_MEGAPIXELS) for r in requests}

    def model(self, operation: str, input_pixels: int | None = None) -> DurationModel:
        """The task's true distribution."""
        return DurationModel(self._truth[operation, input_pixels], WITHIN_SIGMA)

    def record(self, *args: object, **keywords: object) -> None:
        """Nothing to learn."""


@dataclass(frozen=True)
class Figures:
    """Status checks per task and the p95 delay to notice, unscaled seconds."""

    polls_per_task: float
    lag_p95_s: float


def replay(schedule: PollSchedule, requests: list[Request], seed: int, typical: dict[str, float]) -> Figures:
    """Submit the requests as the bench does and check each task when the schedule says."""
    rng = random.Random(seed)
    events: list[tuple[float, int, float, int]] = []  # (when, request, submitted at, checks so far)
    now = 0.0
    for index in range(len(requests)):
        now += rng.expovariate(ARRIVALS_PER_S) / SCALE
        heapq.heappush(events, (now + OVERHEAD_S, index, now + OVERHEAD_S, 0))
    checks, lags = 0, []
    while events:
        now, index, submitted, count = heapq.heappop(events)
        request, age, command = requests[index], now - submitted, command_of(requests[index].caption)
        if count == 0:  # submitted now: the first check is placed with what has been learned so far
            delay = schedule.first_delay(command, typical[command], request.pixels)
        elif age >= request.duration:
            schedule.record(command, age, request.pixels)
            checks += count
            lags.append(age - request.duration + OVERHEAD_S)
            continue
        else:
            delay = OVERHEAD_S + schedule.next_delay(command, age, request.pixels)
        heapq.heappush(events, (now + delay, index, submitted, count + 1))
    return Figures(checks / len(requests), percentile(lags, 0.95))


def seed_figures(seed: int, typical: dict[str, float], tasks: int = TASKS) -> dict[str, Figures]:
    """Every schedule's figures on one seed's requests."""
    requests = draw_requests(tasks, seed)
    return {"adaptive": replay(PollSchedule(rng=random.Random(seed)), requests, seed, typical),
            "oracle": replay(OracleSchedule(requests, rng=random.Random(seed)), requests, seed, typical),
            "fixed:2": replay(PollSchedule.fixed(2.0), requests, seed, typical),
            "fixed:5": replay(PollSchedule.fixed(5.0), requests, seed, typical)}


def meets_targets(figures: dict[str, Figures], policy: str) -> bool:
    """Fewer checks than fixed 5 s and a p95 delay within fixed 2 s's plus the allowance."""
    return (figures[policy].polls_per_task < figures["fixed:5"].polls_per_task
            and figures[policy].lag_p95_s <= figures["fixed:2"].lag_p95_s + LAG_ALLOWANCE_S)


def typical_durations() -> dict[str, float]:
    """The catalogue's typical duration of each operation the bench sends."""
    catalogue = build_catalogue(load_catalogue())
    return {command: catalogue[command].typical_seconds
            for command in {command_of(caption) for caption, _, _ in OPERATIONS}}


def main() -> None:
    """Replay a range of seeds and print how often each schedule meets both polling targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--first-seed", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=90)
    parser.add_argument("--each", action="store_true", help="print every seed's figures")
    options = parser.parse_args()
    typical = typical_durations()
    runs = {seed: seed_figures(seed, typical) for seed in range(options.first_seed, options.first_seed + options.seeds)}
    for seed, figures in runs.items():
        if options.each:
            print(f"seed {seed:3d}  " + "   ".join(f"{policy} {f.polls_per_task:.2f}/{f.lag_p95_s:.2f}"
                                                 + ("*" if policy in ("adaptive", "oracle") and meets_targets(figures, policy) else "")
                                                 for policy, f in figures.items()))
    print(f"{len(runs)} seeds from {options.first_seed}, {TASKS} tasks each (checks per task relative to fixed 5 s; "
          f"p95 delay minus fixed 2 s's):")
    for policy in ("adaptive", "oracle"):
        ratios = [f[policy].polls_per_task / f["fixed:5"].polls_per_task for f in runs.values()]
        excess = [f[policy].lag_p95_s - f["fixed:2"].lag_p95_s for f in runs.values()]
        met = sum(meets_targets(f, policy) for f in runs.values())
        print(f"  {policy:<8} checks ×{statistics.median(ratios):.3f} median (over fixed 5 s on {sum(r >= 1 for r in ratios)}), "
              f"delay +{statistics.median(excess):.2f} s median (over +{LAG_ALLOWANCE_S} s on "
              f"{sum(e > LAG_ALLOWANCE_S for e in excess)}); both targets met on {met} of {len(runs)}")


if __name__ == "__main__":
    main()
