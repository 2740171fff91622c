"""Writes the job side batches or skips, on a real database: the worker's shared commits, and chat records."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import event, select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.jobs.service import SEEN_REFRESH, JobRequest, JobService, QuotaExceeded, Quotas
from bot.jobs.writes import JobWrites
from bot.store import JobRepository, JobState, NewJob, session_factory
from bot.store.db import Sessions
from bot.store.models import chats_table

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def sessions(store_engine: AsyncEngine) -> Sessions:
    return session_factory(store_engine)


def count_commits(engine: AsyncEngine) -> list[int]:
    """A one-item list counting the transactions committed on `engine` from now on."""
    commits = [0]

    @event.listens_for(engine.sync_engine, "commit")
    def _committed(_connection: object) -> None:
        commits[0] += 1

    return commits


async def add_jobs(sessions: Sessions, count: int) -> list[int]:
    async with sessions() as session, session.begin():
        jobs = JobRepository(session)
        return [(await jobs.add(NewJob(chat_id=index, user_id=index, reply_to_message_id=1, operation="upscale",
                                       args={}, inputs=["f"], deadline_at=NOW + timedelta(hours=1)), now=NOW)).id
                for index in range(count)]


async def test_updates_made_together_share_one_commit_and_each_gets_its_own_answer(store_engine, sessions):
    ids = await add_jobs(sessions, 20)
    async with sessions() as session, session.begin():
        await JobRepository(session).claim([JobState.QUEUED], owner="me", now=NOW, lease_for=timedelta(minutes=1),
                                           limit=10)
    writes = JobWrites(sessions)
    commits = count_commits(store_engine)
    # the first ten are leased to "me", the rest to nobody: only the lease holder's changes apply
    results = await asyncio.gather(*(writes.update(job_id, owner="me", state=JobState.RUNNING) for job_id in ids))
    assert commits[0] <= 2  # the first write starts a commit at once; the rest share the next
    assert [result is not None for result in results] == [True] * 10 + [False] * 10
    assert all(result.state is JobState.RUNNING for result in results[:10] if result is not None)
    async with sessions() as session:
        stored = [await JobRepository(session).get(job_id) for job_id in ids]
    assert [job.state for job in stored if job] == [JobState.RUNNING] * 10 + [JobState.QUEUED] * 10


async def test_a_bad_write_fails_alone(sessions):
    [good, other] = await add_jobs(sessions, 2)
    writes = JobWrites(sessions)
    results = await asyncio.gather(writes.update(good, owner=None, attempts=3),
                                   writes.update(other, owner=None, no_such_field=1),
                                   return_exceptions=True)
    assert results[0].attempts == 3
    assert isinstance(results[1], TypeError)


def request(title: str = "Friends") -> JobRequest:
    return JobRequest(chat_id=-100, chat_type="group", chat_title=title, user_id=7, username="ann",
                      first_name="Ann", reply_to_message_id=1, operation="upscale", args={}, inputs=["f"])


async def chat_row(sessions: Sessions):
    async with sessions() as session:
        return (await session.execute(select(chats_table).where(chats_table.c.id == -100))).one()


async def test_a_chats_record_is_rewritten_when_it_changes_or_has_not_been_for_a_while(store_engine, sessions):
    clock = [NOW]
    service = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), clock=lambda: clock[0])
    await service.enqueue(request())
    statements: list[str] = []

    @event.listens_for(store_engine.sync_engine, "before_cursor_execute")
    def _seen(_conn, _cursor, statement, *_args) -> None:
        statements.append(statement)

    clock[0] = NOW + timedelta(seconds=30)
    await service.enqueue(request())
    assert statements and not [s for s in statements if "chats" in s or "users" in s]  # nothing new about them
    assert (await chat_row(sessions)).last_seen == NOW

    await service.enqueue(request(title="Old friends"))
    assert (await chat_row(sessions)).title == "Old friends"

    clock[0] = NOW + SEEN_REFRESH + timedelta(seconds=31)
    await service.enqueue(request(title="Old friends"))
    assert (await chat_row(sessions)).last_seen == clock[0]


async def test_the_quota_check_and_the_store_are_one_step(sessions):
    service = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(max_active=2, max_per_day=0))
    outcomes = await asyncio.gather(*(service.enqueue(request()) for _ in range(5)))
    stored = [outcome for outcome in outcomes if not isinstance(outcome, QuotaExceeded)]
    assert len(stored) == 2  # a burst of messages cannot all pass one check
    assert all("2 jobs in progress" in str(outcome.reason) for outcome in outcomes if isinstance(outcome, QuotaExceeded))
    async with sessions() as session:
        assert await JobRepository(session).quota_usage(7, NOW - timedelta(days=1)) == (2, 2)
