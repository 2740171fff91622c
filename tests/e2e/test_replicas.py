"""Replicas on one PostgreSQL: one polls at a time, another takes over when it is killed, conversations
cross replicas, and migrations started together take turns."""

from __future__ import annotations

import asyncio
import random
import sys
import time
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text

from bot.store import create_engine
from bot.store.db import alembic_config
from bot.store.records import FINAL_STATES
from tests.conftest import _empty_postgres_database
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import private_chat
from tests.harness import BotProcess, bot_settings, fakes, get_updates_calls, process_env, wait_until
from tests.harness.chaos import Answers, ChaosConfig, Traffic

pytestmark = pytest.mark.postgres

#: the longest a fetching replica's death may leave updates unfetched
TAKEOVER_S = 5.0


@pytest.fixture
async def pg_url(postgres_database: str) -> str:
    """An empty PostgreSQL database of this test's own."""
    await _empty_postgres_database(postgres_database)
    return postgres_database


def replicas(telegram: FakeTelegram, sandbox, url: str, workdir: Path, count: int) -> list[BotProcess]:
    """`count` bot processes on one database, each with its own worker id (its job leases) and directory."""
    return [BotProcess(bot_settings(telegram, sandbox, url, worker_id=f"replica-{number}"), workdir / f"r{number}",
                       telegram) for number in range(count)]


async def start_all(bots: list[BotProcess]) -> None:
    """The first polls; the others wait for its lock."""
    await bots[0].start()
    await asyncio.gather(*(bot.start_replica() for bot in bots[1:]))


async def job_states(url: str) -> tuple[dict[str, int], int]:
    """Job counts by state, and how many requests were stored as more than one job."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            states = dict((await connection.execute(text("SELECT state, count(*) FROM jobs GROUP BY state"))).all())
            twice = (await connection.execute(text(
                "SELECT count(*) FROM (SELECT 1 FROM jobs GROUP BY chat_id, reply_to_message_id "
                "HAVING count(*) > 1) AS t"))).scalar_one()
    finally:
        await engine.dispose()
    return states, int(twice)


async def kill_the_fetcher(telegram: FakeTelegram, bots: list[BotProcess]) -> tuple[BotProcess, float]:
    """SIGKILL the replica that fetches updates; how long until another one fetched."""
    await wait_until(lambda: sum(bot.fetches_updates() for bot in bots) == 1, 20, "one replica to fetch updates")
    [leader] = [bot for bot in bots if bot.fetches_updates()]
    await leader.kill()
    killed_at, polls = time.monotonic(), get_updates_calls(telegram)
    await wait_until(lambda: get_updates_calls(telegram) > polls, 20, "another replica to fetch updates")
    return leader, time.monotonic() - killed_at


@pytest.mark.timeout(240)
async def test_three_replicas_lose_nothing_when_the_fetching_one_is_killed_again_and_again(tmp_path: Path,
                                                                                          pg_url: str):
    kills = 3
    async with fakes(task_seconds=0.5) as world:
        bots = replicas(world.telegram, world.sandbox, pg_url, tmp_path, 3)
        try:
            await start_all(bots)
            traffic = Traffic(world.telegram, ChaosConfig(jobs=60, chats=16, send_seconds=16), random.Random(12))
            sending = asyncio.create_task(traffic.send_all())
            takeovers = []
            for _ in range(kills):
                await asyncio.sleep(3.0)
                killed, took = await kill_the_fetcher(world.telegram, bots)
                takeovers.append(took)
                await killed.start_replica()  # back as a replica that waits for the lock
            await sending
            requests = traffic.requests

            def all_answered() -> bool:
                answers = Answers.collect(world.telegram, requests)
                return all(answers.answered(request) for request in requests)

            await wait_until(all_answered, 90, "every request to be answered")
            states: dict[str, int] = {}

            async def settled() -> bool:
                nonlocal states
                states, _ = await job_states(pg_url)
                return all(state in {s.value for s in FINAL_STATES} for state in states)

            for _ in range(60):  # a job whose result went out is recorded delivered a moment later
                if await settled():
                    break
                await asyncio.sleep(0.5)
            answers = Answers.collect(world.telegram, requests)
            _, twice = await job_states(pg_url)
        finally:
            await asyncio.gather(*(bot.close() for bot in bots))
    assert all(took < TAKEOVER_S for took in takeovers), takeovers
    lost = [request for request in requests if not answers.answered(request)]
    stuck = sum(count for state, count in states.items() if state not in {s.value for s in FINAL_STATES})
    duplicated = [request for request in requests if answers.results[request] > 1]
    assert lost == []
    assert stuck == 0, states
    assert twice == 0
    assert sum(states.values()) == len(requests)
    # a result sent again only when its replica died between Telegram's answer and the commit after it
    assert len(duplicated) <= kills, duplicated
    assert all(answers.results[request] + answers.failures[request] >= 1 for request in requests)


@pytest.mark.timeout(120)
async def test_a_face_swap_whose_photos_reach_different_replicas_completes(tmp_path: Path, pg_url: str):
    async with fakes(task_seconds=0.2) as world:
        telegram = world.telegram
        bots = replicas(telegram, world.sandbox, pg_url, tmp_path, 2)
        try:
            await start_all(bots)
            chat = private_chat(ALICE)
            first = bots[0]
            assert first.fetches_updates()
            telegram.user_sends(chat, ALICE, photo=samples.jpeg(200, 200), caption="/faceswap")
            await telegram.wait_for(lambda: any("Now send the" in (m.text or "") for m in telegram.sent(chat.id)), 20)
            await first.kill()  # the face is in the database, not in the replica that took it
            await wait_until(lambda: bots[1].fetches_updates(), 20, "the other replica to fetch updates", bots[1])
            telegram.user_sends(chat, ALICE, photo=samples.jpeg(220, 180, color=(40, 90, 160)))
            [result] = await wait_media(telegram, chat.id)
        finally:
            await asyncio.gather(*(bot.close() for bot in bots))
    assert result.media_kind is not None


@pytest.mark.timeout(120)
async def test_three_processes_migrating_a_fresh_database_at_once_take_turns(tmp_path: Path, pg_url: str):
    env = process_env({"DATABASE_URL": pg_url})
    processes = [await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "migrate", cwd=tmp_path, env=env,
                                                      stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
                 for _ in range(3)]
    outputs = await asyncio.gather(*(process.communicate() for process in processes))
    assert [process.returncode for process in processes] == [0, 0, 0], [out for out, _ in outputs]
    engine = create_engine(pg_url)
    try:
        async with engine.connect() as connection:
            revision = (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalar_one()
            tables = set((await connection.execute(text(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))).scalars())
    finally:
        await engine.dispose()
    assert revision == ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert {"jobs", "conversations", "replicas", "chat_sends"} <= tables
