"""The plan's credits and the free budget in the ledger, on SQLite and PostgreSQL, with a clock the test moves:
unused plan credits end with their period and bought packs do not; the budget holds against many engines at once."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.credits import CreditPolicy, CreditService, Pack, SubscriptionPlan
from bot.credits.subscription import PERIOD
from bot.jobs.service import JobService, NotEnoughCredits, Quotas
from bot.store import create_engine, session_factory
from tests.integration.test_credits import CATALOGUE, request

START = datetime(2026, 11, 28, 12, tzinfo=UTC)


class Clock:
    """Now, as the test sets it."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


async def test_unused_plan_credits_end_with_their_period_and_bought_ones_stay(store_engine: AsyncEngine):
    sessions, clock = session_factory(store_engine), Clock()
    policy = CreditPolicy(CATALOGUE, free_per_day=0, subscription=SubscriptionPlan(3, 250))
    credits = CreditService(sessions, policy, clock=clock)
    jobs = JobService(sessions, deadline=timedelta(hours=1), quotas=Quotas(0, 0), credits=policy, clock=clock)
    await credits.purchase(4, Pack(2, 10), "pack-1")
    assert await credits.subscriptions.grant(4, "subscription:3:250", "sub-1", expires_at=START + PERIOD,
                                             first=True) == 3
    assert not await credits.subscriptions.grant(4, "subscription:3:250", "sub-1", expires_at=START + PERIOD,
                                                 first=True)  # redelivered
    clock.now = START + timedelta(days=1)
    assert not isinstance(await jobs.enqueue(request(4, 1)), NotEnoughCredits)
    shown = await credits.balance(4, chat_id=4, chat_type="private")
    assert (shown.plan, shown.credits) == (2, 2)  # the plan's credits went first: they end soonest

    clock.now = START + PERIOD + timedelta(hours=1)  # nobody renewed: the period is over
    assert (await credits.balance(4, chat_id=4, chat_type="private")).plan == 0
    for message_id in (2, 3):
        assert not isinstance(await jobs.enqueue(request(4, message_id)), NotEnoughCredits)  # the pack pays
    assert isinstance(await jobs.enqueue(request(4, 4)), NotEnoughCredits)
    status = await credits.subscriptions.status(4)
    assert status is not None and not status.active(clock.now) and status.left == 0

    # a new subscription after the lapse: a new id (what editUserStarSubscription is given), a fresh period
    clock.now = START + PERIOD + timedelta(days=3)
    assert await credits.subscriptions.grant(4, "subscription:3:250", "sub-2", expires_at=clock.now + PERIOD,
                                             first=None) == 3
    status = await credits.subscriptions.status(4)
    assert (status.charge_id, status.left, status.active(clock.now)) == ("sub-2", 3, True)

    async def never_called(user_id: int) -> None:
        raise AssertionError("no Stars go back for a period that is over")
    # the first period ended (its last credit spent first): refunding it takes nothing from the new period
    assert (await credits.refund_payment("sub-1", never_called)).status == "spent"
    assert (await credits.subscriptions.status(4)).left == 3

    # a period whose every credit was spent, then renewed: refunding that period takes nothing from the next
    assert await credits.subscriptions.grant(5, "subscription:1:250", "sub-a", expires_at=clock.now + PERIOD,
                                             first=True) == 1
    assert not isinstance(await jobs.enqueue(request(5, 1)), NotEnoughCredits)
    assert await credits.subscriptions.grant(5, "subscription:1:250", "sub-b", expires_at=clock.now + 2 * PERIOD,
                                             first=False) == 1
    assert (await credits.refund_payment("sub-a", never_called)).status == "spent"
    assert (await credits.subscriptions.status(5)).left == 1
    assert await credits.audit() == []


async def test_many_engines_at_once_never_give_a_free_credit_past_the_budget(migrated_url: str):
    policy = CreditPolicy(CATALOGUE, free_per_day=3, free_budget=7)
    engines = [create_engine(migrated_url) for _ in range(4)]
    try:
        services = [JobService(session_factory(engine), deadline=timedelta(hours=1), quotas=Quotas(0, 0),
                               credits=policy) for engine in engines]
        outcomes = await asyncio.gather(*(services[n % 4].enqueue(request(100 + n, 1)) for n in range(12)))
        refused = [outcome for outcome in outcomes if isinstance(outcome, NotEnoughCredits)]
        assert len(refused) == 9 and all(outcome.free_gone for outcome in refused)  # 3 + 3 + 1 given
        credits = CreditService(session_factory(engines[0]), policy)
        left = [(await credits.balance(100 + n, chat_id=100 + n, chat_type="private")).free_left for n in range(12)]
        assert sum(left) + 3 == 7  # the three served spent one each
        newcomer = await credits.balance(999, chat_id=999, chat_type="private")
        assert newcomer.free_left == 0  # none promised once the day's are all given
        assert await credits.audit() == []
    finally:
        for engine in engines:
            await engine.dispose()
