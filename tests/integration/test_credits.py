"""The ledger on SQLite and PostgreSQL: concurrent spending never overspends, settling happens once, and the
audit finds books that do not add up."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.credits import CreditPolicy, CreditService, Pack, StarPayment, audit, ledger
from bot.credits.service import REFUND_GRACE, Reconciliation
from bot.jobs.service import JobRequest, JobService, NotEnoughCredits, Quotas
from bot.jobs.writes import JobWrites
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.store import JobRepository, JobState, create_engine, session_factory
from bot.store.models import accounts_table

CATALOGUE = build_catalogue(load_catalogue(None))


def request(user_id: int, message_id: int, *, chat_id: int | None = None, chat_type: str = "private") -> JobRequest:
    return JobRequest(chat_id=chat_id or user_id, chat_type=chat_type, chat_title=None, user_id=user_id,
                      username=None, first_name=None, reply_to_message_id=message_id, operation="upscale",
                      args={"factor": 2}, inputs=["file"])


async def test_concurrent_requests_from_many_replicas_never_spend_a_credit_twice(migrated_url: str):
    policy = CreditPolicy(CATALOGUE, free_per_day=2)
    engines = [create_engine(migrated_url) for _ in range(4)]
    try:
        credits = CreditService(session_factory(engines[0]), policy)
        assert await credits.purchase(7, Pack(5, 25), "charge-1")
        # one JobService per engine: like replicas, none shares the in-process lock of another
        services = [JobService(session_factory(engine), deadline=timedelta(hours=1), quotas=Quotas(0, 0),
                               credits=policy) for engine in engines]
        outcomes = await asyncio.gather(*(services[n % 4].enqueue(request(7, n)) for n in range(24)))
        queued = [o for o in outcomes if not isinstance(o, NotEnoughCredits)]
        assert len(queued) == 7  # 2 free + 5 bought, each job 1 credit
        assert all(isinstance(o, NotEnoughCredits) for o in outcomes if o not in queued)
        shown = await credits.balance(7, chat_id=7, chat_type="private")
        assert (shown.credits, shown.free_left) == (0, 0)
        assert await credits.audit() == []
    finally:
        for engine in engines:
            await engine.dispose()


async def test_a_job_is_settled_once_and_the_books_show_a_tampered_balance(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    policy = CreditPolicy(CATALOGUE, free_per_day=0)
    credits = CreditService(sessions, policy)
    await credits.purchase(9, Pack(3, 10), "charge-9")
    assert not await credits.purchase(9, Pack(3, 10), "charge-9")  # the same charge again
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy)
    failed, delivered = await jobs.enqueue(request(9, 1)), await jobs.enqueue(request(9, 2))
    writes = JobWrites(sessions)
    now = datetime.now(UTC)
    for _ in range(2):  # a retried final write settles nothing more
        await writes.update(failed.id, owner=None, state=JobState.FAILED, finished_at=now)
        await writes.update(delivered.id, owner=None, state=JobState.DELIVERED, finished_at=now)
    assert (await credits.balance(9, chat_id=9, chat_type="private")).credits == 2
    async with sessions() as session:
        rows = await ledger.history(session, 9)
        assert sorted(row.reason for row in rows) == ["charge", "purchase", "refund", "reserve", "reserve"]
        assert (await JobRepository(session).get(delivered.id)).credits == 1
    assert await credits.audit() == []

    async with sessions() as session, session.begin():
        await session.execute(update(accounts_table).where(accounts_table.c.kind == "user", accounts_table.c.owner_id == 9).values(balance=5))
    async with sessions() as session:
        assert await audit(session) == ["account user:9: balance 5 but its rows sum to 2"]


async def test_pool_transfers_and_caps(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    policy = CreditPolicy(CATALOGUE, free_per_day=0)
    credits = CreditService(sessions, policy)
    await credits.purchase(1, Pack(4, 10), "c1")
    assert await credits.move_to_pool(1, -100, 5) is None  # more than they have
    assert await credits.move_to_pool(1, -100, 3) == 3
    await credits.set_pool_cap(-100, 1)
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy)
    assert not isinstance(await jobs.enqueue(request(2, 1, chat_id=-100, chat_type="supergroup")), NotEnoughCredits)
    assert isinstance(await jobs.enqueue(request(2, 2, chat_id=-100, chat_type="supergroup")), NotEnoughCredits)
    cancelled = await jobs.cancel(-100, user_id=2)
    assert len(cancelled) == 1
    shown = await credits.balance(2, chat_id=-100, chat_type="supergroup")
    assert (shown.pool, shown.pool_left) == (3, 1)  # the cancelled job's credit came back to the pool
    assert await credits.audit() == []


async def test_a_charged_job_is_never_refunded_too(store_engine: AsyncEngine):
    # the charge is written by one statement for many jobs, a refund row by row: both use one key
    sessions = session_factory(store_engine)
    policy = CreditPolicy(CATALOGUE, free_per_day=0)
    await CreditService(sessions, policy).purchase(11, Pack(2, 10), "charge-11")
    job = await JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy).enqueue(
        request(11, 1))
    delivered = await JobWrites(sessions).update(job.id, owner=None, state=JobState.DELIVERED,
                                                 finished_at=datetime.now(UTC))
    async with sessions() as session, session.begin():  # a late, conflicting write that says it failed
        await ledger.settle(session, [replace(delivered, state=JobState.FAILED)], now=datetime.now(UTC))
    async with sessions() as session:
        rows = await ledger.history(session, 11)
    assert sorted(row.reason for row in rows) == ["charge", "purchase", "reserve"]
    [charge] = [row for row in rows if row.reason == "charge"]
    assert (charge.amount, charge.key) == (0, ledger.settle_key(job.id, "user", 11)) == (0, f"job:{job.id}:settle:user:11")
    assert (await CreditService(sessions, policy).balance(11, chat_id=11, chat_type="private")).credits == 1


async def test_the_free_allowance_comes_back_each_day_and_only_once_a_day(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    policy = CreditPolicy(CATALOGUE, free_per_day=2)
    today = datetime(2026, 11, 24, 23, 0, tzinfo=UTC)
    clock = [today]
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy,
                      clock=lambda: clock[0])
    outcomes = [await jobs.enqueue(request(12, n)) for n in range(3)]
    assert [isinstance(o, NotEnoughCredits) for o in outcomes] == [False, False, True]
    clock[0] = today + timedelta(hours=2)  # the next UTC day
    outcomes = [await jobs.enqueue(request(12, n)) for n in range(3, 6)]
    assert [isinstance(o, NotEnoughCredits) for o in outcomes] == [False, False, True]
    async with sessions() as session:
        allowances = [row for row in await ledger.history(session, 12) if row.reason == "allowance"]
    assert len(allowances) == 2
    assert await CreditService(sessions, policy).audit() == []


async def test_a_refund_counts_against_the_day_of_the_reservation_it_returns(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    policy = CreditPolicy(CATALOGUE, free_per_day=0)
    evening = datetime(2026, 11, 24, 23, 0, tzinfo=UTC)
    clock = [evening]
    credits = CreditService(sessions, policy, clock=lambda: clock[0])
    await credits.purchase(1, Pack(10, 50), "c-fund")
    assert await credits.move_to_pool(1, -100, 10) == 10
    await credits.set_pool_cap(-100, 2)
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy,
                      clock=lambda: clock[0])
    group = {"chat_id": -100, "chat_type": "supergroup"}
    outcomes = [await jobs.enqueue(request(2, n, **group)) for n in range(3)]
    assert [isinstance(o, NotEnoughCredits) for o in outcomes] == [False, False, True]  # the cap: 2 a day
    clock[0] = evening + timedelta(hours=2)  # after midnight, yesterday's two jobs are cancelled
    assert len(await jobs.cancel(-100, user_id=2)) == 2
    outcomes = [await jobs.enqueue(request(2, n, **group)) for n in range(3, 7)]
    # today's cap is today's: the refunds of yesterday's reservations lift it by nothing
    assert [isinstance(o, NotEnoughCredits) for o in outcomes] == [False, False, True, True]
    shown = await credits.balance(2, chat_id=-100, chat_type="supergroup")
    assert (shown.pool, shown.pool_left) == (8, 0)
    assert await credits.audit() == []


async def test_a_job_on_behalf_of_a_chat_is_paid_from_the_group_pool_only(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    policy = CreditPolicy(CATALOGUE, free_per_day=3)
    credits = CreditService(sessions, policy)
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy)
    channel, group = -100801, {"chat_id": -100, "chat_type": "supergroup"}
    # no pool: a channel posting in the group gets no free allowance, nor does it in a chat with no pool
    refused = await jobs.enqueue(request(channel, 1, **group))
    assert isinstance(refused, NotEnoughCredits) and refused.pool_only and refused.free_per_day == 0
    assert (await jobs.enqueue(request(channel, 2, chat_id=channel, chat_type="channel"))).pool_only
    assert (await credits.balance(channel, chat_id=-100, chat_type="supergroup")).free_left == 0
    await credits.purchase(1, Pack(5, 50), "c-fund")
    await credits.move_to_pool(1, -100, 5)
    await credits.set_pool_cap(-100, 1)
    assert not isinstance(await jobs.enqueue(request(channel, 3, **group)), NotEnoughCredits)
    # the cap counts the channel as one member; a person keeps their own allowance beside it
    assert (await jobs.enqueue(request(channel, 4, **group))).pool_only
    assert not isinstance(await jobs.enqueue(request(2, 5, **group)), NotEnoughCredits)
    assert not isinstance(await jobs.enqueue(request(2, 6, **group)), NotEnoughCredits)
    async with sessions() as session:
        assert not [row for row in await ledger.history(session, channel) if row.kind == "free"]
    shown = await credits.balance(2, chat_id=-100, chat_type="supergroup")
    assert (shown.pool, shown.free_left) == (3, 2)  # one credit from the pool each (the cap), then Bob's allowance
    assert await credits.audit() == []


def star(charge_id: str, user_id: int, *, refunded: bool = False, payload: str = "credits:10:50") -> StarPayment:
    return StarPayment(charge_id, user_id, 50, payload, refunded=refunded)


async def test_reconciliation_credits_a_missed_payment_once_whatever_the_order_and_however_many_replicas(
        migrated_url: str):
    policy = CreditPolicy(CATALOGUE, free_per_day=0, packs=(Pack(10, 50),))
    engines = [create_engine(migrated_url) for _ in range(3)]
    try:
        services = [CreditService(session_factory(engine), policy) for engine in engines]
        credits = services[0]
        assert await credits.purchase(21, Pack(10, 50), "seen")  # its successful_payment arrived
        assert await credits.purchase(23, Pack(10, 50), "refunded-outside")
        listed = [star("seen", 21), star("missed", 22), star("refunded-outside", 23, refunded=True),
                  star("missed-and-refunded", 24, refunded=True), star("old-pack", 25, payload="credits:7:40")]
        # three replicas at once, each reading Telegram's list in its own order
        rounds = await asyncio.gather(*(service.reconcile(order) for service, order in
                                        zip(services, (listed, listed[::-1], listed[2:] + listed[:2]), strict=True)))
        recovered = sorted((r.charge_id, r.user_id, r.credits) for found in rounds for r in found.recovered)
        assert recovered == [("missed", 22, 10), ("old-pack", 25, 7)]  # each told once, by one replica
        assert await credits.reconcile(listed) == Reconciliation()  # the next hour: nothing more
        balances = [(await credits.balance(user, chat_id=user, chat_type="private")).credits for user in range(21, 26)]
        assert balances == [10, 10, 0, 0, 7]
        # the normal path arriving late adds nothing either
        assert not await credits.purchase(22, Pack(10, 50), "missed")
        assert await credits.audit() == []
    finally:
        for engine in engines:
            await engine.dispose()


async def test_a_refund_calls_telegram_outside_the_ledgers_transactions(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    credits = CreditService(sessions, CreditPolicy(CATALOGUE, free_per_day=0))
    await credits.purchase(31, Pack(10, 50), "to-refund")
    written_meanwhile = []

    async def refund_stars(user_id: int) -> None:
        # while Telegram is asked, the ledger takes writes (even to the payer's own account) without waiting
        async with asyncio.timeout(5):
            written_meanwhile.append(await credits.purchase(user_id, Pack(1, 5), "during-the-round-trip"))

    outcome = await credits.refund_payment("to-refund", refund_stars)
    assert written_meanwhile == [True]
    assert (outcome.status, outcome.user_id, outcome.credits, outcome.balance) == ("ok", 31, 10, 1)
    assert (await credits.refund_payment("to-refund", refund_stars)).status == "refunded"
    assert await credits.audit() == []


async def test_reconciliation_gives_a_payment_to_its_payer_in_the_amount_paid_and_takes_it_from_others(
        migrated_url: str):
    """Issue 28, finding 6: a receipt was credited to whoever sent it, and reconciliation never looked at who paid
    or how much, so it never corrected a mismatch."""
    policy = CreditPolicy(CATALOGUE, free_per_day=0, packs=(Pack(10, 50),))
    engines = [create_engine(migrated_url) for _ in range(2)]
    try:
        services = [CreditService(session_factory(engine), policy) for engine in engines]
        credits = services[0]
        assert await credits.purchase(41, Pack(10, 50), "to-the-wrong-person")  # Telegram says 42 paid
        assert await credits.purchase(43, Pack(10, 50), "too-much")  # Telegram says 25 Stars: half the pack
        assert await credits.purchase(44, Pack(10, 50), "spent-by-the-wrong-person")  # Telegram says 45 paid
        jobs = JobService(session_factory(engines[0]), deadline=timedelta(hours=1), quotas=Quotas(0, 0),
                          credits=policy)
        assert not isinstance(await jobs.enqueue(request(44, 1)), NotEnoughCredits)  # 44 spends one of them
        listed = [star("to-the-wrong-person", 42), StarPayment("too-much", 43, 25, "credits:10:50"),
                  star("spent-by-the-wrong-person", 45), star("right", 46)]
        assert await credits.purchase(46, Pack(10, 50), "right")
        rounds = await asyncio.gather(*(service.reconcile(listed) for service in services))  # two replicas at once
        fixes = sorted((fix.charge_id, fix.payer, fix.credits, fix.given, fix.taken, fix.spent)
                        for done in rounds for fix in done.fixed)
        assert fixes == [("spent-by-the-wrong-person", 45, 10, 10, {44: 9}, 1),
                         ("to-the-wrong-person", 42, 10, 10, {41: 10}, 0),
                         ("too-much", 43, 5, -5, {}, 0)]
        assert await credits.reconcile(listed) == Reconciliation()  # fixed once, for good
        balances = {user: (await credits.balance(user, chat_id=user, chat_type="private")).credits
                    for user in range(41, 47)}
        assert balances == {41: 0, 42: 10, 43: 5, 44: 0, 45: 10, 46: 10}
        assert await credits.audit() == []
        # a refund now takes the credits back from the payer Telegram names, not from the receipt's sender
        outcome = await credits.refund_payment("to-the-wrong-person", lambda user_id: asyncio.sleep(0))
        assert (outcome.status, outcome.user_id, outcome.credits) == ("ok", 42, 10)
    finally:
        for engine in engines:
            await engine.dispose()


async def test_a_refund_racing_a_spend_leaves_the_books_right(store_engine: AsyncEngine):
    """Issue 28: an admin's /refund read that the credits were unspent, asked Telegram, then took back what was left:
    a job started during the round trip kept credits whose Stars went back."""
    sessions = session_factory(store_engine)
    policy = CreditPolicy(CATALOGUE, free_per_day=0)
    credits = CreditService(sessions, policy)
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy)
    await credits.purchase(51, Pack(10, 50), "raced")
    during: list[object] = []

    async def refund_stars(user_id: int) -> None:
        during.append(await jobs.enqueue(request(51, 1)))  # the payer starts a job while Telegram is asked

    outcome = await credits.refund_payment("raced", refund_stars)
    assert (outcome.status, outcome.user_id, outcome.credits, outcome.balance) == ("ok", 51, 10, 0)
    [refused] = during
    assert isinstance(refused, NotEnoughCredits)
    assert (await credits.balance(51, chat_id=51, chat_type="private")).credits == 0
    assert await credits.audit() == []


async def test_a_refund_telegram_refuses_gives_the_credits_back_and_may_be_tried_again(store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    credits = CreditService(sessions, CreditPolicy(CATALOGUE, free_per_day=0))
    await credits.purchase(52, Pack(10, 50), "refused-once")

    async def refused(user_id: int) -> None:
        raise RuntimeError("Telegram said no")

    for _ in range(2):
        try:
            await credits.refund_payment("refused-once", refused)
        except RuntimeError:
            pass
        assert (await credits.balance(52, chat_id=52, chat_type="private")).credits == 10
    outcome = await credits.refund_payment("refused-once", lambda user_id: asyncio.sleep(0))
    assert (outcome.status, outcome.credits) == ("ok", 10)
    assert (await credits.refund_payment("refused-once", lambda user_id: asyncio.sleep(0))).status == "refunded"
    assert await credits.audit() == []


async def test_a_refund_recorded_but_never_made_at_telegram_is_given_back_after_a_grace(store_engine: AsyncEngine):
    now = datetime.now(UTC)
    clock = [now]
    sessions = session_factory(store_engine)
    credits = CreditService(sessions, CreditPolicy(CATALOGUE, free_per_day=0, packs=(Pack(10, 50),)),
                            clock=lambda: clock[0])
    await credits.purchase(53, Pack(10, 50), "crashed-mid-refund")
    async with sessions() as session, session.begin():  # the bot stopped between taking and asking Telegram
        await ledger.hold_payment_refund(session, "crashed-mid-refund", now=now)
    listed = [star("crashed-mid-refund", 53)]
    assert (await credits.reconcile(listed)).undone == []  # maybe still being asked: not yet
    clock[0] = now + REFUND_GRACE + timedelta(seconds=1)
    assert (await credits.reconcile(listed)).undone == ["crashed-mid-refund"]
    assert (await credits.reconcile(listed)).undone == []
    assert (await credits.balance(53, chat_id=53, chat_type="private")).credits == 10
    assert await credits.audit() == []
