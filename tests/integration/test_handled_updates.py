"""The record of updates that made a job, on SQLite and PostgreSQL: written with the job, or not at all."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.jobs.service import JobRequest, JobService, QuotaExceeded, Quotas
from bot.store import JobRecord, JobRepository, session_factory
from bot.store.inbox import DONE, HANDLING_UPDATE, PENDING, Handling, InboxRepository, UpdateHandledElsewhere
from bot.store.models import inbox_table


def request(user_id: int, message_id: int) -> JobRequest:
    return JobRequest(chat_id=user_id, chat_type="private", chat_title=None, user_id=user_id, username=None,
                      first_name="User", reply_to_message_id=message_id, operation="upscale", args={"scale": 2},
                      inputs=["file"])


async def while_handling(update: int | Handling | None, work):
    """Run `work` as a handler of `update` would (the intake sets HANDLING_UPDATE in the handler's task)."""
    token = HANDLING_UPDATE.set(Handling(update) if isinstance(update, int) else update)
    try:
        return await work
    finally:
        HANDLING_UPDATE.reset(token)


async def test_a_job_marks_the_update_it_was_made_for_and_nothing_else(store_engine: AsyncEngine):
    jobs = JobService(session_factory(store_engine), deadline=timedelta(hours=1), quotas=Quotas(max_active=1,
                                                                                                 max_per_day=0))
    assert isinstance(await while_handling(101, jobs.enqueue(request(7, 1))), JobRecord)
    # the quota stops the next one: no job, so its update is not marked (handling it again is right)
    assert isinstance(await while_handling(102, jobs.enqueue(request(7, 2))), QuotaExceeded)
    await while_handling(103, jobs.record_refused(request(8, 3), "no picture"))
    await jobs.enqueue(request(9, 4))  # made outside any update (the Mini App, an album's sweep): nothing marked
    assert [await jobs.made_from_update(update_id) for update_id in (101, 102, 103, 104)] == [True, False, True, False]


async def test_a_webhook_update_keeps_its_state_and_lease_when_its_job_marks_it(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    now = datetime.now(UTC)
    async with sessions() as session, session.begin():
        inbox = InboxRepository(session)
        await inbox.add(201, {"update_id": 201}, chat_id=7, sender_id=7, state=PENDING, now=now)
        [claimed] = await inbox.claim(owner="replica-a", now=now, lease_for=timedelta(minutes=1), limit=1)
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0))
    handling = Handling(201)
    await while_handling(handling, jobs.enqueue(request(7, 1)))
    await while_handling(handling, jobs.enqueue(request(7, 2)))  # one handling may make more than one job
    async with sessions() as session:
        row = (await session.execute(select(inbox_table).where(inbox_table.c.update_id == 201))).one()
    assert (row.state, row.lease_owner, row.attempts) == (PENDING, "replica-a", claimed.attempts)
    assert row.handled_at is not None and await jobs.made_from_update(201)
    # still the replica's to finish: the mark took nothing from it
    async with sessions() as session, session.begin():
        assert await InboxRepository(session).finish(201, owner="replica-a", now=now)


async def test_marks_are_forgotten_a_day_on(store_engine: AsyncEngine):
    clock = [datetime.now(UTC) - timedelta(days=2)]
    jobs = JobService(session_factory(store_engine), deadline=timedelta(hours=1), quotas=Quotas(0, 0),
                      clock=lambda: clock[0])
    await while_handling(301, jobs.enqueue(request(7, 1)))
    clock[0] = datetime.now(UTC)
    await while_handling(302, jobs.enqueue(request(7, 2)))
    assert await jobs.forget_updates(timedelta(days=1)) == 1
    assert [await jobs.made_from_update(update_id) for update_id in (301, 302)] == [False, True]
    async with session_factory(store_engine)() as session:
        assert (await session.scalar(select(inbox_table.c.state).where(inbox_table.c.update_id == 302))) == DONE


async def test_a_second_handling_of_one_update_makes_no_job(store_engine: AsyncEngine):
    """Two replicas handling one update at once (one lost the poller lock or its lease mid-handler): one job."""
    jobs = JobService(session_factory(store_engine), deadline=timedelta(hours=1), quotas=Quotas(0, 0))
    first, second = Handling(401), Handling(401)
    made = await while_handling(first, jobs.enqueue(request(7, 1)))
    try:
        await while_handling(second, jobs.enqueue(request(7, 1)))
    except UpdateHandledElsewhere:
        pass
    else:
        raise AssertionError("a second handling of the update made a job")
    async with session_factory(store_engine)() as session:
        assert [job.id for job in await JobRepository(session).active_for_chat(7, user_id=None)] == [made.id]
    assert isinstance(await while_handling(first, jobs.enqueue(request(7, 2))), JobRecord)  # the first goes on


async def test_handlings_racing_in_open_transactions_store_one_job(store_engine: AsyncEngine):
    """Both transactions open at once: the second mark waits for the first to commit, then is refused."""
    jobs = JobService(session_factory(store_engine), deadline=timedelta(hours=1), quotas=Quotas(0, 0))
    outcomes = await asyncio.gather(*(while_handling(Handling(501), jobs.enqueue(request(7, 1))) for _ in range(2)),
                                    *(while_handling(Handling(501), JobService(
                                        session_factory(store_engine), deadline=timedelta(hours=1),
                                        quotas=Quotas(0, 0)).enqueue(request(7, 1))) for _ in range(2)),
                                    return_exceptions=True)
    assert sum(isinstance(outcome, JobRecord) for outcome in outcomes) == 1, outcomes
    assert all(isinstance(outcome, UpdateHandledElsewhere) for outcome in outcomes
               if not isinstance(outcome, JobRecord)), outcomes
