"""The monthly plan (CREDIT_SUBSCRIPTION, e.g. "300:250"): its credits for each period paid, which end with it.

A subscriber's plan credits are an account of their own ("plan"), spent after the free allowance and
before bought credits. Each payment of the subscription, the first and every renewal Telegram charges
by itself, adds the period's credits once, keyed by its charge id as a pack is (the successful_payment,
a redelivery and reconciliation all meet that key; the plan account is locked first, so one of them
wins on any replica). A new period first ends the last one: what is left of its credits goes, in a
"plan_expire" row; a period nobody renewed ends when its credits are next looked at. No Telegram here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.credits import CreditRepository, Entry, NewEntry
from bot.store.subscriptions import SubscriptionRecord, SubscriptionRepository

PLAN = "plan"
GRANT = "subscription"
EXPIRE = "plan_expire"
#: the invoice payload of the plan names its terms, so a changed plan is a new one at pre-checkout
PAYLOAD_PREFIX = "subscription:"
#: the only subscription period Telegram takes (createInvoiceLink's subscription_period: 30 days)
PERIOD = timedelta(seconds=2592000)
#: a payment found by reconciliation this long after the last period ended starts a new subscription
LAPSE = timedelta(days=1)


@dataclass(frozen=True)
class SubscriptionPlan:
    """`credits` each 30 days for `stars` Telegram Stars."""

    credits: int
    stars: int

    @property
    def payload(self) -> str:
        """The invoice payload that names this plan (checked again at pre-checkout)."""
        return f"{PAYLOAD_PREFIX}{self.credits}:{self.stars}"


def parse_subscription(text: str | None) -> SubscriptionPlan | None:
    """The plan from "credits:stars"; None when unset."""
    text = (text or "").strip()
    if not text:
        return None
    credits, colon, stars = text.partition(":")
    if not colon or not credits.strip().isdigit() or not stars.strip().isdigit():
        raise ValueError(f"CREDIT_SUBSCRIPTION: {text!r} is not credits:stars, e.g. 300:250")
    plan = SubscriptionPlan(int(credits), int(stars))
    if plan.credits <= 0 or not 1 <= plan.stars <= 10000:
        raise ValueError(f"CREDIT_SUBSCRIPTION: {text!r} needs credits > 0 and 1-10000 Stars")
    return plan


def plan_in(payload: str) -> SubscriptionPlan | None:
    """The plan an invoice payload ("subscription:<credits>:<stars>") names, even one no longer offered."""
    parts = payload.removeprefix(PAYLOAD_PREFIX).split(":")
    if not payload.startswith(PAYLOAD_PREFIX) or len(parts) != 2 or not all(part.isdigit() for part in parts):
        return None
    return SubscriptionPlan(int(parts[0]), int(parts[1]))


def paid_plan(payload: str, stars: int | None) -> SubscriptionPlan | None:
    """The plan a payment of `stars` for this payload buys: the payload's, with fewer credits for fewer Stars (as a
    pack's receipt is read); None when it names no plan or buys nothing. `stars` None: the payload's own price."""
    plan = plan_in(payload)
    if plan is None or stars is None or stars >= plan.stars:
        return plan if plan is None or plan.credits > 0 else None
    credits = plan.credits * max(0, stars) // plan.stars
    return SubscriptionPlan(credits, max(0, stars)) if credits > 0 else None


def is_subscription(payload: str) -> bool:
    """Whether an invoice payload is the plan's (not a pack's)."""
    return payload.startswith(PAYLOAD_PREFIX)


async def end_period_if_over(session: AsyncConnection, credits: CreditRepository, user_id: int, balance: int,
                             now: datetime) -> int:
    """The plan account's balance (locked by the caller) after its period ends, if it is over: the rest goes."""
    if balance <= 0:
        return balance
    current = await SubscriptionRepository(session).get(user_id)
    if current is None or current.expires_at > now:
        return balance
    await credits.append([NewEntry(PLAN, user_id, -balance, EXPIRE, charge_id=current.period_charge_id)], now=now)
    return 0


async def grant(session: AsyncConnection, *, user_id: int, plan: SubscriptionPlan, charge_id: str,
                expires_at: datetime, first: bool | None, now: datetime) -> bool:
    """Add a period's credits for one payment, once per charge id; False when it was counted already.

    `first`: the receipt says whether this payment starts the subscription; None (reconciliation, which
    cannot tell) takes a payment within LAPSE of the last period's end as its renewal.
    """
    credits = CreditRepository(session)
    account = (await credits.lock([(PLAN, user_id)], now=now))[(PLAN, user_id)]
    key = f"payment:{charge_id}"
    if await credits.has_key(key):
        return False
    added = NewEntry(PLAN, user_id, plan.credits, GRANT, key=key, charge_id=charge_id)
    subscriptions = SubscriptionRepository(session)
    current = await subscriptions.get(user_id)
    if current is not None and expires_at <= current.expires_at:
        # an earlier period's payment found late: counted, and ended with its period if that is over
        ended = [NewEntry(PLAN, user_id, -plan.credits, EXPIRE, charge_id=charge_id)] if expires_at <= now else []
        await credits.append([added, *ended], now=now)
        return True
    if current is not None:  # written even with nothing left: it marks that period's payment as over (no refund)
        await credits.append([NewEntry(PLAN, user_id, -account.balance, EXPIRE, charge_id=current.period_charge_id)],
                             now=now)
    await credits.append([added], now=now)
    renews = current is not None and first is not True and (
        first is False or expires_at - PERIOD <= current.expires_at + LAPSE)
    await subscriptions.put(SubscriptionRecord(
        user_id, current.charge_id if renews and current else charge_id, charge_id, plan.credits, plan.stars,
        expires_at, current.canceled if renews and current else False), now=now)
    return True


def period_is_over(rows: list[Entry]) -> bool:
    """Whether a plan payment's period ended (its rows include the end's): its credits are gone with it."""
    return any(row.reason == EXPIRE for row in rows)


@dataclass(frozen=True)
class SubscriptionStatus:
    """What /subscription shows: the plan's terms, the period's end, credits left, whether it renews."""

    credits: int
    stars: int
    expires_at: datetime
    left: int
    canceled: bool
    charge_id: str

    def active(self, now: datetime) -> bool:
        """Whether the period paid for is still running."""
        return self.expires_at > now


async def status(session: AsyncConnection, user_id: int, now: datetime) -> SubscriptionStatus | None:
    """A user's subscription and the plan credits left in its period (read without locking)."""
    record = await SubscriptionRepository(session).get(user_id)
    if record is None:
        return None
    balance = (await CreditRepository(session).accounts([(PLAN, user_id)]))[(PLAN, user_id)].balance
    left = balance if record.expires_at > now else 0
    return SubscriptionStatus(record.credits, record.stars, record.expires_at, left, record.canceled, record.charge_id)


async def set_canceled(session: AsyncConnection, user_id: int, canceled: bool, now: datetime) -> None:
    """Record that renewal was stopped or allowed again (after Telegram agreed)."""
    await SubscriptionRepository(session).set_canceled(user_id, canceled, now=now)
