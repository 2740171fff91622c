"""The most free credits the whole bot gives in a UTC day (FREE_CREDITS_DAILY_BUDGET), kept exact across replicas.

Each day is an account of its own ("budget", owner YYYYMMDD) whose balance counts the free credits given
that day, one "free_given" row per allowance topped up. A top-up locks that account (SELECT … FOR UPDATE
on PostgreSQL through the upsert, one writer on SQLite) in the transaction that writes the allowance,
reads what was given, and takes at most what is left: two replicas at once wait for each other, so the
day's total never passes the budget by a single credit. It is locked after the user's own accounts, and
nothing locks it first, so it adds no deadlock. No Telegram here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from bot.store.credits import CreditRepository, NewEntry

BUDGET = "budget"
GIVEN = "free_given"


def budget_owner(now: datetime) -> int:
    """The owner id of `now`'s day's budget account (20261128 for 28 Nov 2026, UTC)."""
    day = now.astimezone(UTC).date()
    return day.year * 10000 + day.month * 100 + day.day


@dataclass(frozen=True)
class Given:
    """Free credits taken from today's budget, and whether this took its last one."""

    credits: int
    reached: bool = False


async def take(credits: CreditRepository, *, user_id: int, wanted: int, budget: int, now: datetime) -> Given:
    """Take up to `wanted` free credits from today's budget for a user's allowance (in its transaction)."""
    owner = budget_owner(now)
    given_so_far = (await credits.lock([(BUDGET, owner)], now=now))[(BUDGET, owner)].balance
    given = max(0, min(wanted, budget - given_so_far))
    if given > 0:
        await credits.append([NewEntry(BUDGET, owner, given, GIVEN, member_id=user_id)], now=now)
    return Given(given, given > 0 and given_so_far + given >= budget)


async def spent(credits: CreditRepository, *, budget: int, now: datetime) -> bool:
    """Whether today's budget is all given (read without locking)."""
    owner = budget_owner(now)
    return (await credits.accounts([(BUDGET, owner)]))[(BUDGET, owner)].balance >= budget
