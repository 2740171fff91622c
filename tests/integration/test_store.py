"""The job store on a real database, SQLite and PostgreSQL alike."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import StatementError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.store import (
    ChatRepository,
    JobRecord,
    JobRepository,
    JobState,
    NewJob,
    Preferences,
    UserRepository,
    create_engine,
    session_factory,
)
from bot.store.db import Sessions, reading
from bot.store.models import chats_table, users_table

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
LEASE = timedelta(seconds=30)
QUEUED = [JobState.QUEUED]


def new_job(chat_id: int = 1, user_id: int | None = 10, **overrides: Any) -> NewJob:
    """A queued upscale job with a deadline an hour away."""
    values: dict[str, Any] = {
        "chat_id": chat_id,
        "user_id": user_id,
        "reply_to_message_id": 100,
        "operation": "upscale",
        "args": {"scale": 2},
        "inputs": ["file-a"],
        "deadline_at": NOW + timedelta(hours=1),
    }
    values.update(overrides)
    return NewJob(**values)


@pytest.fixture
def sessions(store_engine: AsyncEngine) -> Sessions:
    """Sessions on the freshly migrated test database."""
    return session_factory(store_engine)


@pytest.fixture
async def session(sessions: Sessions) -> AsyncIterator[AsyncConnection]:
    """One session for tests that need no concurrency."""
    async with sessions() as opened:
        yield opened


async def add_jobs(session: AsyncConnection, jobs: list[NewJob], *, now: datetime = NOW) -> list[JobRecord]:
    """Queue several jobs and commit."""
    repo = JobRepository(session)
    records = [await repo.add(job, now=now) for job in jobs]
    await session.commit()
    return records


async def test_add_then_get_round_trips_json_and_aware_datetimes(
    sessions: Sessions,
) -> None:
    args = {"style": "Ghibli ✨", "size": [1024, 768], "nested": {"strength": 0.5, "on": True, "x": None}}
    deadline = datetime(2025, 3, 1, 15, 30, 15, 123456, tzinfo=timezone(timedelta(hours=3)))
    job = new_job(
        chat_id=-1001234567890,  # supergroup ids need 64 bits
        user_id=7_000_000_001,
        args=args,
        inputs=["face", "template"],
        deadline_at=deadline,
        chat_type="supergroup",
        status_message_id=55,
    )
    async with sessions() as session:
        added = await JobRepository(session).add(job, now=NOW)
        await session.commit()

    async with sessions() as session:
        loaded = await JobRepository(session).get(added.id)

    assert loaded == added
    assert loaded is not None
    assert loaded.args == args
    assert loaded.inputs == ["face", "template"]
    assert (loaded.chat_id, loaded.user_id, loaded.chat_type) == (-1001234567890, 7_000_000_001, "supergroup")
    assert (loaded.reply_to_message_id, loaded.status_message_id) == (100, 55)
    assert loaded.state is JobState.QUEUED
    assert loaded.attempts == 0
    assert loaded.deadline_at == deadline
    assert loaded.deadline_at.tzinfo == UTC
    assert loaded.deadline_at.hour == 12  # 15:30+03:00 is stored and returned as 12:30 UTC
    assert loaded.next_check_at == loaded.created_at == loaded.updated_at == NOW
    assert loaded.task_id is None and loaded.lease_owner is None and loaded.lease_until is None
    assert loaded.result_urls == [] and loaded.sent_message_ids == []
    assert loaded.submitted_at is None and loaded.finished_at is None and loaded.error is None


async def test_get_unknown_job_is_none(session: AsyncConnection) -> None:
    assert await JobRepository(session).get(424242) is None


async def test_naive_datetimes_are_refused(session: AsyncConnection) -> None:
    with pytest.raises(StatementError, match="naive datetime"):
        await JobRepository(session).add(new_job(deadline_at=datetime(2025, 3, 1, 13, 0)), now=NOW)


async def test_claim_takes_only_due_jobs_in_the_given_states(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    due, later, running = await add_jobs(session, [new_job(), new_job(), new_job()])
    await repo.update(later.id, owner=None, next_check_at=NOW + timedelta(seconds=10))
    await repo.update(running.id, owner=None, state=JobState.RUNNING)

    claimed = await repo.claim(QUEUED, owner="w1", now=NOW, lease_for=LEASE, limit=10)

    assert [job.id for job in claimed] == [due.id]
    assert claimed[0].lease_owner == "w1"
    assert claimed[0].lease_until == NOW + LEASE
    assert await repo.claim([JobState.COMPLETED], owner="w1", now=NOW, lease_for=LEASE, limit=10) == []
    # Ten seconds on, `due` is still leased to w1; the other two are free and due.
    both = await repo.claim(
        [JobState.QUEUED, JobState.RUNNING],
        owner="w2",
        now=NOW + timedelta(seconds=10),
        lease_for=LEASE,
        limit=10,
    )
    assert {job.id for job in both} == {later.id, running.id}


async def test_claim_respects_limit(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    await add_jobs(session, [new_job(chat_id=chat) for chat in range(5)])

    first = await repo.claim(QUEUED, owner="w", now=NOW, lease_for=LEASE, limit=3)
    second = await repo.claim(QUEUED, owner="w", now=NOW, lease_for=LEASE, limit=3)
    third = await repo.claim(QUEUED, owner="w", now=NOW, lease_for=LEASE, limit=3)

    assert (len(first), len(second), third) == (3, 2, [])
    assert await repo.claim(QUEUED, owner="w", now=NOW, lease_for=LEASE, limit=0) == []


async def test_leased_job_is_reclaimable_only_after_its_lease_expires(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    (job,) = await add_jobs(session, [new_job()])
    assert [j.id for j in await repo.claim(QUEUED, owner="w1", now=NOW, lease_for=LEASE, limit=5)] == [job.id]

    assert (
        await repo.claim(QUEUED, owner="w2", now=NOW + timedelta(seconds=10), lease_for=LEASE, limit=5) == []
    )
    at_expiry = NOW + LEASE
    assert await repo.claim(QUEUED, owner="w2", now=at_expiry, lease_for=LEASE, limit=5) == []

    later = at_expiry + timedelta(microseconds=1)
    reclaimed = await repo.claim(QUEUED, owner="w2", now=later, lease_for=LEASE, limit=5)

    assert [(j.id, j.lease_owner, j.lease_until) for j in reclaimed] == [(job.id, "w2", later + LEASE)]
    assert await repo.update(job.id, owner="w1", state=JobState.SUBMITTING) is None
    assert (await repo.get(job.id)).state is JobState.QUEUED  # type: ignore[union-attr]


async def test_claim_is_fair_across_chats(session: AsyncConnection) -> None:
    busy = [new_job(chat_id=1) for _ in range(50)]
    quiet = [new_job(chat_id=2), new_job(chat_id=2)]
    busy_records = await add_jobs(session, busy, now=NOW - timedelta(minutes=10))
    quiet_records = await add_jobs(session, quiet, now=NOW - timedelta(minutes=1))

    claimed = await JobRepository(session).claim(QUEUED, owner="w", now=NOW, lease_for=LEASE, limit=4)

    # Each chat's oldest job first, then each chat's second: the busy chat cannot starve the quiet one.
    assert [job.id for job in claimed] == [
        busy_records[0].id,
        quiet_records[0].id,
        busy_records[1].id,
        quiet_records[1].id,
    ]


async def test_concurrent_claimers_never_share_a_job(migrated_url: str) -> None:
    engines = [create_engine(migrated_url), create_engine(migrated_url)]
    try:
        factories = [session_factory(engine) for engine in engines]
        async with factories[0]() as session:
            await add_jobs(session, [new_job(chat_id=job % 7) for job in range(60)])

        async def claim(worker: int) -> list[int]:
            async with factories[worker]() as session:
                jobs = await JobRepository(session).claim(
                    QUEUED, owner=f"w{worker}", now=NOW, lease_for=LEASE, limit=3
                )
                await session.commit()
                return [job.id for job in jobs]

        owners: dict[int, str] = {}
        for _ in range(10):
            first, second = await asyncio.gather(claim(0), claim(1))
            assert not set(first) & set(second)
            for worker, ids in ((0, first), (1, second)):
                for job_id in ids:
                    assert job_id not in owners, f"job {job_id} claimed twice"
                    owners[job_id] = f"w{worker}"

        assert len(owners) == 60
        async with factories[0]() as session:
            repo = JobRepository(session)
            assert await repo.claim(QUEUED, owner="w9", now=NOW, lease_for=LEASE, limit=10) == []
            for job_id, owner in owners.items():
                assert (await repo.get(job_id)).lease_owner == owner  # type: ignore[union-attr]
    finally:
        for engine in engines:
            await engine.dispose()


async def test_update_applies_changes_only_for_the_lease_holder(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    (job,) = await add_jobs(session, [new_job()])
    await repo.claim(QUEUED, owner="w1", now=NOW, lease_for=LEASE, limit=1)

    assert await repo.update(job.id, owner="intruder", state=JobState.FAILED, error="no") is None
    unchanged = await repo.get(job.id)
    assert unchanged is not None and unchanged.state is JobState.QUEUED and unchanged.error is None

    submitted = NOW + timedelta(seconds=2)
    updated = await repo.update(
        job.id,
        owner="w1",
        state=JobState.RUNNING,
        task_id="task-123",
        attempts=1,
        submitted_at=submitted,
        next_check_at=submitted + timedelta(seconds=3),
        result_urls=["https://example.test/a.png", "https://example.test/b.png"],
        sent_message_ids=[7, 8],
        updated_at=submitted,
    )
    assert updated is not None
    assert updated == await repo.get(job.id)
    assert (updated.state, updated.task_id, updated.attempts) == (JobState.RUNNING, "task-123", 1)
    assert updated.submitted_at == submitted and updated.updated_at == submitted
    assert updated.result_urls == ["https://example.test/a.png", "https://example.test/b.png"]
    assert updated.sent_message_ids == [7, 8]
    assert updated.lease_owner == "w1"

    unleased = await repo.update(job.id, owner=None, lease_owner=None, lease_until=None)
    assert unleased is not None and unleased.lease_owner is None
    assert unleased.updated_at > submitted  # defaults to the wall clock when not given
    assert await repo.update(424242, owner=None, attempts=3) is None


async def test_update_refuses_unknown_fields_and_the_id(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    (job,) = await add_jobs(session, [new_job()])
    with pytest.raises(TypeError, match="colour"):
        await repo.update(job.id, owner=None, colour="red")
    with pytest.raises(TypeError, match="id"):
        await repo.update(job.id, owner=None, id=99)


async def test_release_and_release_all_only_drop_the_owners_leases(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    await add_jobs(session, [new_job(chat_id=chat) for chat in range(4)])
    mine = await repo.claim(QUEUED, owner="me", now=NOW, lease_for=LEASE, limit=3)
    theirs = await repo.claim(QUEUED, owner="them", now=NOW, lease_for=LEASE, limit=3)
    assert (len(mine), len(theirs)) == (3, 1)

    await repo.release(mine[0].id, owner="them")
    assert (await repo.get(mine[0].id)).lease_owner == "me"  # type: ignore[union-attr]
    await repo.release(mine[0].id, owner="me")
    released = await repo.get(mine[0].id)
    assert released is not None and released.lease_owner is None and released.lease_until is None

    assert await repo.release_all(owner="me") == 2
    assert await repo.release_all(owner="me") == 0
    assert (await repo.get(theirs[0].id)).lease_owner == "them"  # type: ignore[union-attr]
    again = await repo.claim(QUEUED, owner="next", now=NOW, lease_for=LEASE, limit=10)
    assert {job.id for job in again} == {job.id for job in mine}


async def test_cancel_chat_cancels_only_that_chats_unfinished_jobs(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    queued, running, delivered, other_chat = await add_jobs(
        session, [new_job(chat_id=1), new_job(chat_id=1), new_job(chat_id=1), new_job(chat_id=2)]
    )
    await repo.update(
        running.id,
        owner=None,
        state=JobState.RUNNING,
        task_id="task-9",
        lease_owner="w1",
        lease_until=NOW + LEASE,
    )
    await repo.update(delivered.id, owner=None, state=JobState.DELIVERED, finished_at=NOW)
    cancel_time = NOW + timedelta(minutes=1)

    cancelled = await repo.cancel_chat(1, user_id=None, now=cancel_time)

    assert [job.id for job in cancelled] == [queued.id, running.id]
    assert all(job.state is JobState.CANCELLED for job in cancelled)
    assert all(job.finished_at == cancel_time and job.lease_owner is None for job in cancelled)
    assert cancelled[1].task_id == "task-9"
    assert (await repo.get(delivered.id)).state is JobState.DELIVERED  # type: ignore[union-attr]
    assert (await repo.get(other_chat.id)).state is JobState.QUEUED  # type: ignore[union-attr]
    assert await repo.active_for_chat(1, user_id=None) == []
    # The worker that held the lease finds it gone and must not overwrite the cancellation.
    assert await repo.update(running.id, owner="w1", state=JobState.COMPLETED) is None
    assert await repo.cancel_chat(1, user_id=None, now=cancel_time) == []


async def test_active_for_chat_lists_unfinished_jobs_oldest_first(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    newer = (await add_jobs(session, [new_job(chat_id=5)], now=NOW))[0]
    older = (await add_jobs(session, [new_job(chat_id=5)], now=NOW - timedelta(minutes=3)))[0]
    failed = (await add_jobs(session, [new_job(chat_id=5)], now=NOW - timedelta(minutes=9)))[0]
    await add_jobs(session, [new_job(chat_id=6)])
    await repo.update(failed.id, owner=None, state=JobState.FAILED)

    assert [job.id for job in await repo.active_for_chat(5, user_id=None)] == [older.id, newer.id]


async def test_a_users_cancel_and_list_leave_other_members_jobs_alone(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    alices, bobs, alices_elsewhere = await add_jobs(
        session, [new_job(chat_id=-7, user_id=1), new_job(chat_id=-7, user_id=2), new_job(chat_id=8, user_id=1)]
    )

    assert [job.id for job in await repo.active_for_chat(-7, user_id=1)] == [alices.id]
    assert [job.id for job in await repo.active_for_chat(-7, user_id=None)] == [alices.id, bobs.id]
    cancelled = await repo.cancel_chat(-7, user_id=1, now=NOW)

    assert [job.id for job in cancelled] == [alices.id]
    assert (await repo.get(bobs.id)).state is JobState.QUEUED  # type: ignore[union-attr]
    assert (await repo.get(alices_elsewhere.id)).state is JobState.QUEUED  # type: ignore[union-attr]
    assert [job.id for job in await repo.cancel_chat(-7, user_id=None, now=NOW)] == [bobs.id]


async def test_refused_requests_are_kept_but_not_counted_against_the_daily_quota(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    queued, refused = await add_jobs(session, [new_job(user_id=10), new_job(user_id=10)])
    assert queued.refused is False and queued.failure_kind is None
    await repo.update(refused.id, owner=None, state=JobState.FAILED, refused=True, failure_kind="bad_input",
                      error="The factor must be 2 or 4.")

    stored = await repo.get(refused.id)
    assert stored is not None and stored.refused and stored.failure_kind == "bad_input"
    assert stored.error == "The factor must be 2 or 4." and not stored.failure_untold
    assert await repo.quota_usage(10, NOW - timedelta(hours=1)) == (1, 1)
    assert await repo.oldest_created_since(10, NOW - timedelta(hours=1)) == NOW


async def test_counts_for_quotas_and_by_state(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    made: list[JobRecord] = []
    for when in (NOW - timedelta(days=1), NOW - timedelta(hours=2), NOW):
        made.extend(await add_jobs(session, [new_job(user_id=10)], now=when))
    await add_jobs(session, [new_job(user_id=11), new_job(user_id=None)])
    await repo.update(made[0].id, owner=None, state=JobState.DELIVERED)
    await repo.update(made[1].id, owner=None, state=JobState.RUNNING)

    assert await repo.quota_usage(10, NOW - timedelta(hours=3)) == (2, 2)
    assert await repo.quota_usage(12, NOW - timedelta(hours=3)) == (0, 0)
    assert await repo.quota_usage(10, NOW) == (2, 1)
    assert await repo.quota_usage(10, NOW - timedelta(days=2)) == (2, 3)
    assert await repo.oldest_created_since(10, NOW - timedelta(hours=3)) == NOW - timedelta(hours=2)
    assert await repo.oldest_created_since(10, NOW - timedelta(days=2)) == NOW - timedelta(days=1)
    assert await repo.oldest_created_since(10, NOW + timedelta(seconds=1)) is None
    counts = await repo.counts_by_state()
    assert counts == {state: 0 for state in JobState} | {
        JobState.QUEUED: 3,
        JobState.RUNNING: 1,
        JobState.DELIVERED: 1,
    }


async def test_next_due_at_is_the_earliest_claimable_time(session: AsyncConnection) -> None:
    repo = JobRepository(session)
    assert await repo.next_due_at(QUEUED) is None
    soon, later = await add_jobs(session, [new_job(), new_job()])
    await repo.update(soon.id, owner=None, next_check_at=NOW + timedelta(seconds=5))
    await repo.update(later.id, owner=None, next_check_at=NOW + timedelta(seconds=50), state=JobState.RUNNING)

    assert await repo.next_due_at(QUEUED) == NOW + timedelta(seconds=5)
    assert await repo.next_due_at([JobState.QUEUED, JobState.RUNNING]) == NOW + timedelta(seconds=5)
    assert await repo.next_due_at([JobState.RUNNING]) == NOW + timedelta(seconds=50)
    assert await repo.next_due_at([JobState.COMPLETED]) is None

    # A job someone holds is not claimable before its lease runs out.
    await repo.claim(QUEUED, owner="w", now=NOW + timedelta(seconds=5), lease_for=LEASE, limit=1)
    assert await repo.next_due_at(QUEUED) == NOW + timedelta(seconds=5) + LEASE


async def test_touch_upserts_chats_and_users(session: AsyncConnection) -> None:
    chats, users = ChatRepository(session), UserRepository(session)
    await chats.touch(-100500, type="group", title="Cats", now=NOW)
    await users.touch(42, username="alice", first_name="Alice", now=NOW)
    await session.commit()
    later = NOW + timedelta(days=2)
    await chats.touch(-100500, type="supergroup", title="Cats & Dogs", now=later)
    await users.touch(42, username=None, first_name="Alicia", now=later)
    await chats.touch(7, type="private", title=None, now=later)
    await session.commit()

    chat_rows = (await session.execute(select(chats_table).order_by(chats_table.c.id))).all()
    user_rows = (await session.execute(select(users_table))).all()

    # touching leaves the preferences (language, settings) as they were: none chosen
    assert [tuple(row) for row in chat_rows] == [
        (-100500, "supergroup", "Cats & Dogs", NOW, later, None, {}),
        (7, "private", None, later, later, None, {}),
    ]
    assert [tuple(row) for row in user_rows] == [(42, None, "Alicia", NOW, later, None, {})]


async def test_sqlite_engine_sets_pragmas_and_creates_the_directory(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "dir" / "bot.db"
    engine = create_engine(f"sqlite:///{path}")  # no driver named: aiosqlite is chosen
    try:
        async with engine.connect() as connection:
            pragmas = [
                (await connection.exec_driver_sql(f"PRAGMA {name}")).scalar()
                for name in ("journal_mode", "busy_timeout", "foreign_keys")
            ]
        assert path.parent.is_dir()
        assert pragmas == ["wal", 30000, 1]
    finally:
        await engine.dispose()


async def test_sqlite_transactions_take_the_write_lock_at_begin(tmp_path: Path) -> None:
    path = tmp_path / "bot.db"
    engine = create_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with session_factory(engine)() as session:
            await session.execute(text("SELECT 1"))  # a read alone opens the transaction
            other = sqlite3.connect(path, timeout=0, isolation_level=None)
            try:
                with pytest.raises(sqlite3.OperationalError, match="locked"):
                    other.execute("BEGIN IMMEDIATE")
                await session.commit()
                other.execute("BEGIN IMMEDIATE")
                other.execute("ROLLBACK")
            finally:
                other.close()
    finally:
        await engine.dispose()


async def test_preferences_of_users_and_chats_are_kept_and_merged(session: AsyncConnection) -> None:
    users, chats = UserRepository(session), ChatRepository(session)
    assert await users.preferences(10) == Preferences()
    await users.touch(10, username="alice", first_name="Alice", now=NOW)
    assert await users.set_preferences(10, now=NOW, language="ru") == Preferences("ru", {})
    await users.set_preferences(10, now=NOW, upscale_factor=4)
    # a user never seen before can choose too; touching a user later keeps their choices
    await users.set_preferences(11, now=NOW, language="ar")
    await users.touch(11, username="bob", first_name="Bob", now=NOW + timedelta(minutes=1))
    await chats.set_preferences(-100, type="supergroup", title="Club", now=NOW, followups="everyone")
    await chats.touch(-100, type="supergroup", title="Club 2", now=NOW)
    await session.commit()
    assert await users.preferences(10) == Preferences("ru", {"upscale_factor": 4})
    assert await users.preferences(11) == Preferences("ar", {})
    assert await chats.preferences(-100) == Preferences(None, {"followups": "everyone"})
    await users.set_preferences(10, now=NOW, language=None)  # back to Telegram's language
    assert await users.preferences(10) == Preferences(None, {"upscale_factor": 4})


async def test_queued_ahead_counts_the_jobs_still_waiting_before_a_job(session: AsyncConnection) -> None:
    jobs = JobRepository(session)
    first, second, third = [await jobs.add(new_job(chat_id=chat), now=NOW) for chat in (1, 2, 3)]
    await jobs.update(first.id, owner=None, state=JobState.RUNNING)  # submitted: no longer waiting
    assert [await jobs.queued_ahead(job.id) for job in (first, second, third)] == [0, 0, 1]


async def test_a_read_neither_waits_for_a_writer_nor_sees_what_it_has_not_committed(sessions: Sessions) -> None:
    async with sessions() as session:
        first = (await add_jobs(session, [new_job()]))[0]
    async with sessions() as writer, writer.begin():  # holds SQLite's write lock until the block ends
        await JobRepository(writer).add(new_job(chat_id=2), now=NOW)

        async def read() -> list[int]:
            async with reading(sessions) as session:
                return [job.id for job in await JobRepository(session).active_for_chat(1, user_id=None)
                        + await JobRepository(session).active_for_chat(2, user_id=None)]

        # an ordinary connection would wait here for the writer (up to SQLite's busy timeout)
        assert await asyncio.wait_for(read(), 2) == [first.id]
