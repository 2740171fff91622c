"""Flood limits: how close to Telegram's 30 messages a second the bot delivers a backlog, and how many 429s it draws.

The fake Bot API enforces Telegram's limits (30 calls a second for the bot, about 1 a second per
private chat with a burst of 3, 20 a minute per group). Requests come from many private chats and a
few groups; every task finishes at the same moment, some seconds after the last request, so a
backlog of results (each a photo plus the deletion of its status message) waits for delivery at
once. The send rate is measured over whole seconds from the first result until fewer than 30 private
chats still wait for theirs (from then on, 1 a second per chat caps the rate below 30); groups
deliver at 20 a minute and finish later, inside or outside that window.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

from bench.perf.world import RESULT_METHODS, OkCounter, bot_env, running_replicas, wait_until, world
from tests.fakes import samples
from tests.fakes.telegram import User, group, private_chat
from tests.fakes.telegram_limits import BOT_LIMIT_PER_SECOND, FLOOD_METHODS


@dataclass(frozen=True)
class FloodResult:
    """The achieved send rate against the limit, and the 429s."""

    jobs: int
    window_s: float
    calls_in_window: int
    rate_per_s: float
    rate_ratio: float
    tg_429: int
    total_s: float


async def run_flood(workdir: Path, *, private_chats: int = 60, jobs_per_chat: int = 5, groups: int = 2,
                    jobs_per_group: int = 3, ready_after: float = 25.0, timeout: float = 300.0,
                    database_url: str | None = None, replicas: int = 1) -> FloodResult:
    """Queue the requests, let every task finish together, and watch the backlog drain (by `replicas` bot
    processes on `database_url`, which more than one needs to be PostgreSQL)."""
    ready_at = time.monotonic() + ready_after + 10.0  # replaced once the requests are in
    photo = samples.jpeg(64, 48)

    def until_ready(operation: str, task_id: str) -> float:
        return max(0.0, ready_at - time.monotonic())

    async with world(rate_limits=True, task_duration=until_ready) as (telegram, sandbox):
        env = bot_env(telegram, sandbox, database_url or f"sqlite+aiosqlite:///{workdir}/bot.db",
                      poll_policy="fixed:0.5")
        async with running_replicas(env, workdir, telegram, replicas) as bots:
            bot = bots[0]
            first_call = len(telegram.calls)
            started = time.monotonic()
            ready_at = started + ready_after
            senders = [(private_chat(user), user, jobs_per_chat)
                       for user in (User(9000 + index, f"Flood{index}") for index in range(private_chats))]
            senders += [(group(-1009000 - index, f"Group {index}"), User(9900 + index, f"Member{index}"), jobs_per_group)
                        for index in range(groups)]
            requests = [(chat, user) for turn in range(max(jobs_per_chat, jobs_per_group))
                        for chat, user, count in senders if turn < count]  # interleaved, as a busy bot sees them
            for chat, user in requests:
                telegram.user_sends(chat, user, photo=photo, caption="/upscale 2")
            jobs = len(requests)
            results = OkCounter(telegram, RESULT_METHODS, first_call)
            await wait_until(lambda: results() >= jobs, timeout,
                             f"{jobs} results under flood limits", bot)
            total = time.monotonic() - started
    calls = telegram.calls[first_call:]
    private_ids = {9000 + index for index in range(private_chats)}
    results = [call for call in calls if call.method in RESULT_METHODS and call.ok]
    window_start = min(call.time for call in results)
    # each private chat's last flood call: once fewer than BOT_LIMIT_PER_SECOND chats are left, the backlog
    # can no longer fill the bot's limit
    last_by_chat = {}
    for call in calls:
        chat_id = call.params.get("chat_id")
        if call.ok and call.method in FLOOD_METHODS and chat_id in private_ids:
            last_by_chat[chat_id] = call.time
    finishes = sorted(last_by_chat.values())
    window_end = finishes[max(0, len(finishes) - BOT_LIMIT_PER_SECOND)]
    # whole seconds from the first result: any such span holds at most 30 per second, so 1.0 is the best
    window = float(max(1, math.floor(window_end - window_start)))
    in_window = sum(1 for call in calls if call.ok and call.method in FLOOD_METHODS
                    and window_start <= call.time < window_start + window)
    rate = in_window / window
    return FloodResult(jobs=jobs, window_s=window, calls_in_window=in_window, rate_per_s=rate,
                       rate_ratio=rate / BOT_LIMIT_PER_SECOND, tg_429=telegram.stats["429"], total_s=total)
