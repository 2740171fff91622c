"""/readyz and /metrics against a real database while a writer holds its lock: quick answers, no lock taken."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from aiohttp.test_utils import TestClient, TestServer
from sqlalchemy import make_url, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.http.probes import ping_database, unfinished_jobs
from bot.http.server import DB_CHECK_TIMEOUT_S, Readiness, Routes, build_app
from bot.metrics import Metrics
from bot.store import JobRepository, NewJob, session_factory

#: well below the SQLite busy timeout and the database check's own limit: an answer that waited on the lock is late
QUICK_S = 1.0


@pytest.fixture
async def client(store_engine: AsyncEngine) -> AsyncIterator[TestClient]:
    sessions = session_factory(store_engine)
    now = datetime.now(UTC)
    async with sessions() as session, session.begin():
        await JobRepository(session).add(NewJob(chat_id=1, user_id=1, reply_to_message_id=1, operation="upscale",
                                                args={}, inputs=["file"], deadline_at=now + timedelta(hours=1)),
                                         now=now)
    app = build_app(Readiness(check_database=lambda: ping_database(sessions)), Metrics(), Routes(),
                    jobs_waiting=lambda: unfinished_jobs(sessions))
    async with TestClient(TestServer(app)) as test_client:
        yield test_client


async def timed_get(client: TestClient, path: str) -> tuple[int, str, float]:
    started = time.monotonic()
    async with client.get(path) as response:
        return response.status, await response.text(), time.monotonic() - started


async def test_probes_answer_at_once_while_a_writer_holds_the_lock(client, migrated_url, store_engine):
    if store_engine.dialect.name == "sqlite":
        writer = sqlite3.connect(make_url(migrated_url).database, isolation_level=None)
        writer.execute("BEGIN IMMEDIATE")  # what the bot's every write transaction takes
        writer.execute("UPDATE jobs SET attempts = attempts + 1")
    else:
        writer = await store_engine.connect()
        await writer.begin()
        await writer.execute(text("SELECT id FROM jobs FOR UPDATE"))  # a claim holding its rows
        await writer.execute(text("UPDATE jobs SET attempts = attempts + 1"))
    try:
        ready, body, ready_took = await timed_get(client, "/readyz")
        scraped, metrics, scrape_took = await timed_get(client, "/metrics")
    finally:
        if isinstance(writer, sqlite3.Connection):
            writer.execute("ROLLBACK")
            writer.close()
        else:
            await writer.rollback()
            await writer.close()
    assert ready == 200, body
    assert scraped == 200
    assert 'bot_jobs_waiting{state="queued"} 1.0' in metrics
    assert ready_took < QUICK_S and scrape_took < QUICK_S, (ready_took, scrape_took)


@pytest.mark.parametrize("db_url", [pytest.param("postgres", marks=pytest.mark.postgres)], indirect=True)
async def test_a_table_locked_outright_costs_a_scrape_its_counts_not_its_answer(client, store_engine):
    writer = await store_engine.connect()
    await writer.begin()
    await writer.execute(text("LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE"))  # as a migration does
    try:
        ready, _, ready_took = await timed_get(client, "/readyz")
        scraped, metrics, scrape_took = await timed_get(client, "/metrics")
    finally:
        await writer.rollback()
        await writer.close()
    assert ready == 200 and ready_took < QUICK_S  # the database answers; only one table is locked
    assert scraped == 200 and "bot_jobs_waiting{" not in metrics
    assert scrape_took < DB_CHECK_TIMEOUT_S + QUICK_S


async def test_scrapes_share_one_read_and_a_hung_read_is_not_waited_for():
    reads = 0
    release = asyncio.Event()

    async def hanging() -> dict[str, int]:
        nonlocal reads
        reads += 1
        await release.wait()
        return {"queued": 2}

    async def hung_ping() -> None:
        await asyncio.Event().wait()

    app = build_app(Readiness(check_database=hung_ping), Metrics(), Routes(), jobs_waiting=hanging)
    async with TestClient(TestServer(app)) as client:
        started = time.monotonic()
        answers = await asyncio.gather(*(timed_get(client, "/metrics") for _ in range(10)),
                                       timed_get(client, "/readyz"))
        took = time.monotonic() - started
        assert [status for status, _, _ in answers] == [200] * 10 + [503]
        assert took < DB_CHECK_TIMEOUT_S + QUICK_S
        assert reads == 1  # ten scrapes, one read
        release.set()
        _, metrics, _ = await timed_get(client, "/metrics")  # the late read's counts, kept for a few seconds
        _, metrics_again, _ = await timed_get(client, "/metrics")
    assert 'bot_jobs_waiting{state="queued"} 2.0' in metrics and 'bot_jobs_waiting{state="queued"} 2.0' in metrics_again
    assert reads == 1
