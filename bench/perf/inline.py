"""Inline queries: how fast the bot answers `@bot …` while people type, 50 queries a second.

The real bot runs as a subprocess against the fake Bot API (inline mode on) with 100 people, each with
30 delivered results written into its database before it starts. For `seconds`, a query arrives every
1/rate s, from a person in turn: empty (their results), a style name (a filtered list) or a
description (Generate offers and matches). The answer time is from the query entering the fake's
queue to the bot's answerInlineQuery reaching it (long polling included, as with Telegram).

    python -m bench.perf.inline [--rate 50] [--seconds 20]
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.perf.latency import answer_times, at_rate, main
from bench.perf.world import bot_env, running_process, world
from bot.store import create_engine, migrate
from bot.store.models import jobs_table
from bot.store.records import JobState
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User

PEOPLE = 100
RESULTS_EACH = 30
QUERIES = ("", "anime", "a lighthouse at dawn", "cartoon", "a cat on a roof")


async def seed_results(database_url: str, telegram: FakeTelegram) -> None:
    """Delivered imagine jobs for every person, their result photos known to the fake."""
    await migrate(database_url)
    files = [telegram.add_file(samples.jpeg(64 + index, 64)) for index in range(RESULTS_EACH)]
    now = datetime.now(UTC) - timedelta(days=1)
    rows = [{
        "chat_id": 50_000 + person, "user_id": 50_000 + person, "chat_type": "private", "reply_to_message_id": None,
        "status_message_id": None, "operation": "imagine",
        "args": {"prompt": "a picture", "style": ("anime", "cartoon")[index % 2], "size": "1:1"}, "inputs": [],
        "task_id": f"{person:06d}{index:06d}", "state": JobState.DELIVERED, "attempts": 1, "next_check_at": now,
        "deadline_at": now, "lease_owner": None, "lease_until": None, "result_urls": [], "error": None,
        "sent_message_ids": [], "result_files": [{"id": files[index], "kind": "photo"}],
        "created_at": now + timedelta(seconds=index), "updated_at": now, "submitted_at": now, "finished_at": now,
    } for person in range(PEOPLE) for index in range(RESULTS_EACH)]
    engine = create_engine(database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(jobs_table.insert(), rows)
    finally:
        await engine.dispose()


async def run_inline(workdir: Path, *, rate: float = 50.0, seconds: float = 20.0) -> dict[str, float]:
    """Answer times (ms) of inline queries at `rate` a second for `seconds`."""
    async with world() as (telegram, sandbox):
        telegram.inline.enabled = True
        database_url = f"sqlite+aiosqlite:///{workdir}/bot.db"
        await seed_results(database_url, telegram)
        people = [User(50_000 + person, f"P{person}", language_code="en") for person in range(PEOPLE)]
        async with running_process(bot_env(telegram, sandbox, database_url), workdir, telegram):
            queries = await at_rate(rate, seconds, lambda number: telegram.inline.user_types(
                people[number % PEOPLE], QUERIES[number % len(QUERIES)]))
            await telegram.wait_for(lambda: all(telegram.inline.queries[q].answered_at for q in queries), 30)
    times = [(telegram.inline.queries[q].answered_at - telegram.inline.queries[q].at) * 1000 for q in queries]
    return answer_times("inline", "inline_queries", times)


if __name__ == "__main__":
    main(__doc__, run_inline, rate=50.0)
