"""What the latency benchmarks share: arrivals at a steady rate, percentiles, and the answer-time summary."""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path


def percentile(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by linear interpolation."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


async def at_rate(rate: float, seconds: float, arrive: Callable[[int], str]) -> list[str]:
    """Call `arrive(number)` every 1/rate s for `seconds` (on schedule, however long each call took); what
    each call returned."""
    arrived: list[str] = []
    started = time.monotonic()
    for number in range(int(rate * seconds)):
        await asyncio.sleep(max(0.0, started + number / rate - time.monotonic()))
        arrived.append(arrive(number))
    return arrived


def answer_times(name: str, counted: str, times_ms: list[float]) -> dict[str, float]:
    """The figures of a run's answer times in milliseconds: how many (`counted`), median, 95th percentile and
    the slowest (`<name>_answer_ms_…`)."""
    return {counted: len(times_ms), f"{name}_answer_ms_p50": round(statistics.median(times_ms), 1),
            f"{name}_answer_ms_p95": round(percentile(times_ms, 0.95), 1),
            f"{name}_answer_ms_max": round(max(times_ms), 1)}


def main(doc: str, run: Callable[..., Awaitable[dict]], rate: float) -> None:
    """A benchmark's command line: `--rate` and `--seconds`, one JSON line of figures."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rate", type=float, default=rate)
    parser.add_argument("--seconds", type=float, default=20.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        print(json.dumps(asyncio.run(run(Path(workdir), rate=options.rate, seconds=options.seconds))))
