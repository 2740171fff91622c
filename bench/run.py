"""Performance benchmark: the real bot against the fake Bot API and the sandbox on loopback.

    python -m bench.run [--quick | --smoke] [--repeat N] [--only throughput,polling,...] [--pg-url URL]

Sections (see bench/perf/): throughput on SQLite and PostgreSQL (instant tasks, Telegram limits off,
with Telegram calls per job), polling (adaptive against fixed 2 s and 5 s polling on log-normal
durations, time-scaled), idle (memory and CPU with 10,000 jobs waiting), prep (a 12-megapixel JPEG
prepared for each operation) and flood (a backlog of results under Telegram's flood limits). The
bot runs as a subprocess; the fakes run here. `--repeat` runs everything N times and reports each
figure's median. Prints one block per section, the figures with their targets, and, last, one JSON
line with every figure's key. --quick keeps the whole run to a few minutes; --smoke only
shows that every section still runs (its figures mean nothing).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from bench.perf.flood import run_flood
from bench.perf.idle import run_idle
from bench.perf.polling import run_polling
from bench.perf.prep import run_prep, run_prep_flood
from bench.perf.replica_callbacks import run_replica_callbacks
from bench.perf.report import KEYS, figures_table, json_line, median_figures
from bench.perf.throughput import SLOW_TASK_S, run_slow_calls, run_throughput
from tests.harness import ROOT

SECTIONS = ("throughput", "slow", "pg", "polling", "idle", "prep", "flood", "replicas")


@dataclass(frozen=True)
class Sizes:
    """How much work each section does."""

    jobs: int
    pg_jobs: int
    poll_tasks: int
    poll_scale: float
    poll_arrivals_per_s: float
    idle_jobs: int
    idle_seconds: float
    prep_runs: int
    flood_chats: int
    flood_jobs_per_chat: int
    flood_ready_after: float
    slow_jobs: int = 20


FULL = Sizes(jobs=2000, pg_jobs=2000, poll_tasks=300, poll_scale=0.1, poll_arrivals_per_s=3.0, idle_jobs=10_000,
             idle_seconds=20.0, prep_runs=7, flood_chats=60, flood_jobs_per_chat=5, flood_ready_after=25.0)
QUICK = Sizes(jobs=200, pg_jobs=200, poll_tasks=100, poll_scale=0.1, poll_arrivals_per_s=3.0, idle_jobs=10_000,
              idle_seconds=8.0, prep_runs=3, flood_chats=40, flood_jobs_per_chat=4, flood_ready_after=15.0)
#: every section with a handful of jobs: does the benchmark still run? (a minute or so)
SMOKE = Sizes(jobs=20, pg_jobs=20, poll_tasks=6, poll_scale=0.1, poll_arrivals_per_s=3.0, idle_jobs=200,
              idle_seconds=1.0, prep_runs=1, flood_chats=4, flood_jobs_per_chat=2, flood_ready_after=3.0,
              slow_jobs=4)


def say(text: str = "") -> None:
    """Progress and tables go to stdout as they come."""
    print(text, flush=True)


def postgres_url(explicit: str | None) -> str | None:
    """--pg-url, $TEST_POSTGRES_URL, or the local server .ci/postgres.sh starts (None when there is none)."""
    if explicit or os.environ.get("TEST_POSTGRES_URL"):
        return explicit or os.environ["TEST_POSTGRES_URL"]
    script = ROOT / ".ci" / "postgres.sh"
    if not script.exists() or shutil.which("pg_lsclusters") is None:
        return None
    try:
        done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120, check=True)
    except (subprocess.SubprocessError, OSError) as error:
        say(f"  (PostgreSQL unavailable: {error})")
        return None
    return done.stdout.strip().splitlines()[-1]


@contextlib.asynccontextmanager
async def fresh_database(url: str) -> AsyncIterator[str]:
    """A new, empty database on the server of `url` (dropped afterwards); yields its URL."""
    import asyncpg
    from sqlalchemy import make_url

    parsed = make_url(url)
    name = f"bench_{secrets.token_hex(4)}"
    connect = {"host": parsed.host, "port": parsed.port or 5432, "user": parsed.username,
               "password": parsed.password, "database": parsed.database}
    admin = await asyncpg.connect(**connect)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    try:
        yield parsed.set(database=name).render_as_string(hide_password=False)
    finally:
        admin = await asyncpg.connect(**connect)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()


async def run_once(sizes: Sizes, sections: set[str], workdir: Path, pg_url: str | None, seed: int) -> dict[str, float | None]:
    """Every chosen section once; returns the figures it measured (the rest stay None)."""
    figures: dict[str, float | None] = dict.fromkeys(KEYS)
    if "throughput" in sections:
        say(f"throughput: {sizes.jobs} jobs, instant tasks, Telegram limits off, SQLite")
        result = await run_throughput(sizes.jobs, f"sqlite+aiosqlite:///{workdir}/throughput/bot.db",
                                      workdir / "throughput")
        figures["throughput_jobs_s"] = result.jobs_per_s
        figures["tg_calls_per_job"] = result.tg_calls_per_job
        # every throughput job is quick (an upscale): acknowledged with a reaction
        figures["tg_calls_per_job_quick"] = result.tg_calls_per_job
        say(f"  {result.jobs_per_s:.1f} jobs/s ({result.seconds:.1f} s); bot CPU {result.bot_cpu_s:.1f} s = "
            f"{1000 * result.bot_cpu_s / result.jobs:.1f} ms per job; peak RSS {result.bot_peak_rss_mb:.0f} MB")
        say(f"  Telegram calls per job {result.tg_calls_per_job:.2f}: {result.calls_by_method}")
    if "slow" in sections:
        say(f"slow jobs: {sizes.slow_jobs} text-to-image requests whose tasks take {SLOW_TASK_S:g} s")
        figures["tg_calls_per_job_slow"] = await run_slow_calls(
            sizes.slow_jobs, f"sqlite+aiosqlite:///{workdir}/slow/bot.db", workdir / "slow")
        say(f"  Telegram calls per slow job {figures['tg_calls_per_job_slow']:.2f}")
    if "pg" in sections:
        if pg_url is None:
            say("throughput on PostgreSQL: skipped (no server; pass --pg-url or set TEST_POSTGRES_URL)")
        else:
            say(f"throughput: {sizes.pg_jobs} jobs on PostgreSQL (a fresh database)")
            async with fresh_database(pg_url) as url:
                result = await run_throughput(sizes.pg_jobs, url, workdir / "throughput-pg")
            figures["throughput_jobs_s_pg"] = result.jobs_per_s
            say(f"  {result.jobs_per_s:.1f} jobs/s ({result.seconds:.1f} s); bot CPU "
                f"{1000 * result.bot_cpu_s / result.jobs:.1f} ms per job")
    if "polling" in sections:
        say(f"polling: {sizes.poll_tasks} tasks, log-normal durations (median 8 s, p95 40 s), time scale "
            f"{sizes.poll_scale}, {sizes.poll_arrivals_per_s:g} arrivals/s; figures in unscaled seconds")
        results = await run_polling(sizes.poll_tasks, scale=sizes.poll_scale, arrivals_per_s=sizes.poll_arrivals_per_s,
                                    seed=seed, workdir=workdir / "polling")
        for policy, result in results.items():
            say(f"  {policy:<9} polls/task {result.polls_per_task:5.2f}   lag p50 {result.lag_p50_s:5.2f} s   "
                f"p95 {result.lag_p95_s:5.2f} s   max {result.lag_max_s:6.2f} s   (bot CPU {result.bot_cpu_pct:.0f}%)")
        figures["polls_per_task"] = results["adaptive"].polls_per_task
        figures["lag_p95_s"] = results["adaptive"].lag_p95_s
        figures["polls_per_task_fixed2"] = results["fixed:2"].polls_per_task
        figures["lag_p95_s_fixed2"] = results["fixed:2"].lag_p95_s
        figures["polls_per_task_fixed5"] = results["fixed:5"].polls_per_task
        figures["lag_p95_s_fixed5"] = results["fixed:5"].lag_p95_s
        figures["polls_per_task_cb"] = results["adaptive+cb"].polls_per_task
        figures["lag_p95_s_cb"] = results["adaptive+cb"].lag_p95_s
        figures["polls_per_task_cb_lossy"] = results["adaptive+cb-lossy"].polls_per_task
        figures["lag_p95_s_cb_lossy"] = results["adaptive+cb-lossy"].lag_p95_s
    if "idle" in sections:
        say(f"idle: {sizes.idle_jobs} jobs waiting (running, next check an hour away); CPU over {sizes.idle_seconds:g} s")
        result = await run_idle(sizes.idle_jobs, workdir / "idle", seconds=sizes.idle_seconds,
                                settle=5.0 if sizes is FULL else 3.0 if sizes is QUICK else 0.5)
        figures["rss_mb_10k"] = result.rss_mb
        figures["cpu_pct_10k"] = result.cpu_pct
        say(f"  RSS {result.rss_mb:.0f} MB (peak {result.peak_rss_mb:.0f}), CPU {result.cpu_pct:.1f}%; "
            f"with an empty queue: RSS {result.baseline_rss_mb:.0f} MB, CPU {result.baseline_cpu_pct:.1f}%")
    if "prep" in sections:
        say(f"prep: a 4000x3000 JPEG prepared for each operation, median of {sizes.prep_runs}")
        results = await run_prep(workdir / "prep", sizes.prep_runs)
        for result in results:
            say(f"  {result.operation:<44} {result.median_ms:6.1f} ms   peak +{result.peak_mb:5.1f} MB   -> {result.output}")
        figures["prep_ms_12mp"] = results[0].median_ms
        figures["prep_peak_mb"] = max(result.peak_mb for result in results)
        flood = await run_prep_flood(workdir / "prep")
        figures["prep_flood_peak_rss_mb"] = flood.peak_rss_mb
        say(f"  {flood.inputs} PNGs of 40 MP at once through the worker's preparation slots: "
            f"peak RSS {flood.peak_rss_mb:.0f} MB in {flood.seconds:.0f} s (target <= 400 MB)")
    if "flood" in sections:
        say(f"flood: {sizes.flood_chats} private chats x {sizes.flood_jobs_per_chat} jobs + 2 groups, every task "
            "finishing together, fake Bot API enforcing flood limits")
        result = await run_flood(workdir / "flood", private_chats=sizes.flood_chats,
                                 jobs_per_chat=sizes.flood_jobs_per_chat, ready_after=sizes.flood_ready_after)
        figures["tg_rate_ratio"] = result.rate_ratio
        figures["tg_429"] = float(result.tg_429)
        say(f"  {result.rate_per_s:.1f} calls/s over {result.window_s:.1f} s of backlog ({result.calls_in_window} calls) = "
            f"{result.rate_ratio:.3f} of 30/s; 429s: {result.tg_429}; all {result.jobs} delivered in {result.total_s:.0f} s")
    if "replicas" in sections:
        await run_replicas(sizes, workdir, pg_url, figures)
    return figures


async def run_replicas(sizes: Sizes, workdir: Path, pg_url: str | None, figures: dict[str, float | None]) -> None:
    """Replicas on one PostgreSQL: throughput with one and with two, the flood with three."""
    if pg_url is None:
        say("replicas: skipped (no PostgreSQL server; pass --pg-url or set TEST_POSTGRES_URL)")
        return
    for count in (1, 2):
        say(f"replicas: throughput of {sizes.pg_jobs} jobs with {count} replica(s) on PostgreSQL (a fresh database)")
        async with fresh_database(pg_url) as url:
            result = await run_throughput(sizes.pg_jobs, url, workdir / f"replicas-r{count}", replicas=count)
        figures[f"throughput_jobs_s_pg_r{count}"] = result.jobs_per_s
        say(f"  {result.jobs_per_s:.1f} jobs/s ({result.seconds:.1f} s); bots' CPU "
            f"{1000 * result.bot_cpu_s / result.jobs:.1f} ms per job")
    r1, r2 = figures["throughput_jobs_s_pg_r1"], figures["throughput_jobs_s_pg_r2"]
    if r1 and r2:
        say(f"  two replicas / one: {r2 / r1:.2f}")
    say(f"replicas: flood with 3 replicas on PostgreSQL, {sizes.flood_chats} private chats x "
        f"{sizes.flood_jobs_per_chat} jobs + 2 groups, flood limits on")
    async with fresh_database(pg_url) as url:
        result = await run_flood(workdir / "replicas-flood", private_chats=sizes.flood_chats,
                                 jobs_per_chat=sizes.flood_jobs_per_chat, ready_after=sizes.flood_ready_after,
                                 database_url=url, replicas=3)
    figures["tg_rate_ratio_r3"] = result.rate_ratio
    figures["tg_429_r3"] = float(result.tg_429)
    say(f"  {result.rate_per_s:.1f} calls/s over {result.window_s:.1f} s of backlog ({result.calls_in_window} calls) = "
        f"{result.rate_ratio:.3f} of 30/s; 429s: {result.tg_429}; all {result.jobs} delivered in {result.total_s:.0f} s")
    lossy, tasks = max(2, sizes.poll_tasks // 7), max(4, sizes.poll_tasks // 3)
    say(f"replicas: service callbacks with 3 replicas on PostgreSQL (one called back), {lossy} tasks losing "
        f"a tenth of the callbacks, then {tasks} losing none; polling's durations, time scale {sizes.poll_scale}")
    async with fresh_database(pg_url) as url:
        called = await run_replica_callbacks(workdir / "replicas-callbacks", url, lossy_tasks=lossy, tasks=tasks,
                                             scale=sizes.poll_scale, arrivals_per_s=sizes.poll_arrivals_per_s)
    figures["polls_per_task_cb_r3"] = called.polls_per_task
    say(f"  {called.lost} of {called.first_tasks} callbacks lost first; then {called.polls_per_task:.2f} checks per "
        f"task, lag p95 {called.lag_p95_s:.2f} s over {called.tasks} tasks")


async def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller runs: a few minutes in all")
    size.add_argument("--smoke", action="store_true", help="a handful of jobs per section: does it still run?")
    parser.add_argument("--repeat", type=int, default=1, help="run everything N times; report medians")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections of {', '.join(SECTIONS)}")
    parser.add_argument("--pg-url", default=None, help="PostgreSQL server URL (a fresh database is made on it)")
    parser.add_argument("--seed", type=int, default=5, help="seed of the drawn task durations and arrivals")
    parser.add_argument("--keep", action="store_true", help="keep the working directory (bot logs, databases)")
    args = parser.parse_args(argv)
    sections = {name.strip() for name in args.only.split(",") if name.strip()}
    unknown = sections - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    sizes = SMOKE if args.smoke else QUICK if args.quick else FULL
    size_name = 'smoke' if args.smoke else 'quick' if args.quick else 'full'
    pg_url = postgres_url(args.pg_url) if sections & {"pg", "replicas"} else None
    workdir = Path(tempfile.mkdtemp(prefix="aiart-bench-"))
    started = time.monotonic()
    runs = []
    try:
        for index in range(max(1, args.repeat)):
            if args.repeat > 1:
                say(f"=== run {index + 1} of {args.repeat}")
            runs.append(await run_once(sizes, sections, workdir / f"run-{index + 1}", pg_url, args.seed + index))
    finally:
        if args.keep:
            say(f"working directory kept: {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    figures = median_figures(runs)
    say()
    say(f"figures ({size_name} run{'s' if len(runs) > 1 else ''}, "
        f"{'median of ' + str(len(runs)) if len(runs) > 1 else 'one run'}, {time.monotonic() - started:.0f} s)")
    say(figures_table(figures, runs))
    say(json_line(figures))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
