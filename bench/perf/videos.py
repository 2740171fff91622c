"""Videos: status checks per video task, and the bot's memory while many large videos are delivered at once.

`videos` chats each ask `/video` at the same moment; every task takes `task_seconds` (scaled by the poll
time scale, as the polling section does) and its result is an MP4 padded to `megabytes` MB (the sandbox's
`sandbox-size-<n>mb` trigger), so all deliveries fall together. Figures: status GETs per task (the shipped
catalogue's usual time of the default model, 90 s), the bot's peak RSS (VmHWM) and its rise over the
idle bot, and how long the last video took to arrive.

    python -m bench.perf.videos                      # 50 videos of 30 MB
    python -m bench.perf.videos --videos 10 --megabytes 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

from bench.perf.world import ProcStats, bot_env, running_process, wait_until, world
from bot.sandbox.state import FileStore
from tests.fakes.telegram import User, private_chat
from tests.harness import sqlite_url

#: the poll schedule and the sandbox run ten times faster than real time (a 90 s task takes 9 s)
TIME_SCALE = 0.1


async def run_videos(videos: int, megabytes: int, workdir: Path, *, task_seconds: float = 90.0) -> dict[str, float]:
    """Deliver `videos` videos of `megabytes` MB at once; the figures."""
    async with world(task_seconds=task_seconds * TIME_SCALE) as (telegram, sandbox):
        # every result stays served until the bot fetched it (the sandbox forgets the oldest past 128 MB)
        sandbox.state.results = FileStore(limit_bytes=(videos + 2) * (megabytes + 1) * 1024 * 1024)
        env = bot_env(telegram, sandbox, sqlite_url(workdir / "bot.db"), poll_time_scale=TIME_SCALE,
                      free_credits_for_video="true")
        async with running_process(env, workdir, telegram) as bot:
            stats = ProcStats(bot.pid)
            await asyncio.sleep(2.0)
            idle = stats.memory_mb("VmHWM")
            users = [User(50_000 + number, f"viewer{number}") for number in range(videos)]
            started = time.monotonic()
            for user in users:
                telegram.user_sends(private_chat(user), user, text=f"/video seedance a storm at sea sandbox-size-{megabytes}mb")

            def delivered() -> int:
                return sum(1 for user in users for message in telegram.sent(user.id) if message.media_kind == "video")

            peak_rss = 0.0

            async def watch() -> None:
                nonlocal peak_rss
                while True:
                    peak_rss = max(peak_rss, stats.memory_mb("VmRSS"))
                    await asyncio.sleep(0.05)

            watcher = asyncio.create_task(watch())
            try:
                await wait_until(lambda: delivered() == videos, 600, "every video delivered", bot)
            finally:
                watcher.cancel()
            seconds = time.monotonic() - started
            checks = [len(times) for times in sandbox.state.tasks.checks.values()]
            return {"video_checks_per_task": statistics.mean(checks) if checks else 0.0,
                    "video_checks_max": float(max(checks, default=0)),
                    "video_peak_mb": stats.memory_mb("VmHWM"), "video_idle_mb": idle,
                    "video_rss_sampled_peak_mb": peak_rss, "video_seconds": seconds,
                    "videos": float(videos), "video_mb": float(megabytes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=50)
    parser.add_argument("--megabytes", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-videos-") as folder:
        figures = asyncio.run(run_videos(args.videos, args.megabytes, Path(folder)))
    for key, value in figures.items():
        print(f"{key:28} {value:10.1f}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
