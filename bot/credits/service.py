"""What the chat side asks of credits, each call one transaction: balances, purchases, refunds, pools."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from bot.clock import utcnow
from bot.credits import ledger, subscription
from bot.credits.packs import Pack, credits_in, pack_of, stars_in
from bot.credits.prices import Prices
from bot.credits.subscription import SubscriptionPlan
from bot.operations.catalogue import Operation, ResultKind
from bot.store.credits import CreditRepository, Entry
from bot.store.db import Sessions, reading

GROUP_TYPES = frozenset({"group", "supergroup"})


@dataclass(frozen=True)
class StarPayment:
    """A payment as Telegram's record of Stars transactions lists it (getStarTransactions)."""

    charge_id: str
    user_id: int
    stars: int
    payload: str
    refunded: bool = False
    #: the payer's Telegram app language, when Telegram says
    language: str | None = None
    #: when Telegram made it, and for a subscription's payment the period it pays for (seconds)
    date: datetime | None = None
    subscription_period: int | None = None


@dataclass(frozen=True)
class Recovered:
    """A payment reconciliation credited: the bot had not seen its successful_payment."""

    charge_id: str
    user_id: int
    credits: int
    language: str | None = None


@dataclass(frozen=True)
class Reconciliation:
    """What one comparison with Telegram's record changed: payments credited, grants fixed, refunds undone."""

    recovered: list[Recovered] = field(default_factory=list)
    #: payments whose credits had gone to someone else than their payer, or in another amount than paid for
    fixed: list[ledger.GrantFix] = field(default_factory=list)
    #: charge ids whose credits a /refund took but whose Stars Telegram never refunded: given back
    undone: list[str] = field(default_factory=list)


#: a refund recorded here but not at Telegram is given back only after this long (a /refund may be mid-flight)
REFUND_GRACE = timedelta(minutes=10)


@dataclass(frozen=True)
class CreditPolicy:
    """The operator's terms: prices, the daily free allowance, the packs on sale."""

    operations: Mapping[str, Operation]
    prices: Prices = field(default_factory=Prices)
    free_per_day: int = 0
    packs: tuple[Pack, ...] = field(default_factory=tuple)
    #: the monthly plan on sale (CREDIT_SUBSCRIPTION), if any
    subscription: SubscriptionPlan | None = None
    #: the most free credits the whole bot gives a day (None: no limit)
    free_budget: int | None = None
    #: whether the free daily credits pay for videos too (FREE_CREDITS_FOR_VIDEO); by default only bought ones do
    free_for_video: bool = False

    def free_pays(self, operation: str) -> bool:
        """Whether the free daily allowance may pay for a job of `operation`."""
        found = self.operations.get(operation)
        return self.free_for_video or found is None or found.result is not ResultKind.VIDEO

    @property
    def on_sale(self) -> bool:
        """Whether credits can be bought: packs or the plan."""
        return bool(self.packs) or self.subscription is not None

    def price(self, operation: str, args: Mapping[str, Any]) -> int:
        """What a job of `operation` with `args` costs (0 for an operation no longer offered)."""
        found = self.operations.get(operation)
        return 0 if found is None else self.prices.of(found, args)

    @staticmethod
    def pool_of(chat_id: int, chat_type: str) -> int | None:
        """The pool a job in this chat draws on first: the group's; none in private chats."""
        return chat_id if chat_type in GROUP_TYPES else None


class CreditService:
    """Balances, purchases, refunds and pools for the handlers; each call commits its own transaction."""

    def __init__(self, sessions: Sessions, policy: CreditPolicy, *,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self._sessions = sessions
        self.policy = policy
        self._clock = clock
        self.subscriptions = SubscriptionService(sessions, policy, clock=clock)

    async def balance(self, user_id: int, *, chat_id: int, chat_type: str) -> ledger.Balance:
        """A user's credits, today's free allowance left, and this group's pool."""
        async with self._sessions() as session:
            return await ledger.balance(session, user_id=user_id, pool_chat_id=self.policy.pool_of(chat_id, chat_type),
                                        now=self._clock(), free_per_day=self.policy.free_per_day,
                                        budget=self.policy.free_budget)

    async def purchase(self, user_id: int, pack: Pack, charge_id: str) -> bool:
        """Add a paid pack once per charge id; False when this payment was already counted."""
        async with self._sessions() as session, session.begin():
            return await ledger.purchase(session, user_id=user_id, pack=pack, charge_id=charge_id, now=self._clock())

    async def refund_payment(self, charge_id: str,
                             refund_stars: Callable[[int], Awaitable[None]]) -> ledger.PaymentRefund:
        """Take a payment's credits back if they are all unspent, then refund its Stars (`refund_stars(user_id)`).

        Telegram is called between two short transactions, never inside one: no lock of the ledger waits
        for a round trip. The credits are taken first, so a job started during the round trip cannot spend
        them (it is refused for credits instead); if refunding the Stars raises, they are given back. A crash
        between the two leaves them taken: reconciliation gives them back if Telegram has not refunded.
        """
        async with self._sessions() as session, session.begin():
            outcome = await ledger.hold_payment_refund(session, charge_id, now=self._clock())
        if outcome.status != "ok" or outcome.user_id is None:
            return outcome
        try:
            await refund_stars(outcome.user_id)
        except BaseException:
            async with self._sessions() as session, session.begin():
                await ledger.undo_payment_refund(session, charge_id, now=self._clock())
            raise
        left = await self.balance(outcome.user_id, chat_id=outcome.user_id, chat_type="private")
        return dataclasses.replace(outcome, balance=left.credits)  # with what came in during the round trip

    async def reconcile(self, payments: Iterable[StarPayment]) -> Reconciliation:
        """Bring the ledger in line with Telegram's record of Stars payments: who paid, how much, what went back.

        A payment with no purchase row is credited (keyed by its charge id, as the normal path is: only
        one of them, on one replica, ever adds it); one credited to someone else than its payer, or with
        other credits than its Stars buy, is fixed; a refunded one has its credits taken back, once; one
        whose refund was recorded here but never made at Telegram has them given back. The order of
        `payments` does not matter. One short transaction per charge that needs a change.
        """
        listed = {payment.charge_id: payment for payment in payments}
        async with reading(self._sessions) as session:
            known = await ledger.payments_recorded(session, listed)
            grants = await CreditRepository(session).charge_grants(
                [charge for charge, reasons in known.items() if "purchase" in reasons])
        done = Reconciliation()
        for charge_id, payment in sorted(listed.items()):
            reasons = known.get(charge_id, set())
            credits = self.credits_paid(payment.payload, payment.stars)
            if "purchase" not in reasons and credits > 0:
                async with self._sessions() as session, session.begin():
                    added = await ledger.purchase(session, user_id=payment.user_id, pack=Pack(credits, payment.stars),
                                                  charge_id=charge_id, now=self._clock())
                if added and not payment.refunded:
                    done.recovered.append(Recovered(charge_id, payment.user_id, credits, payment.language))
            elif "purchase" in reasons and {o: c for o, c in grants.get(charge_id, {}).items() if c} != \
                    {payment.user_id: credits}:
                async with self._sessions() as session, session.begin():
                    fixed = await ledger.fix_grant(session, charge_id, payer=payment.user_id, credits_paid=credits,
                                                   now=self._clock())
                if fixed is not None:
                    done.fixed.append(fixed)
            await self._settle_refund(payment, reasons, done)
        return done

    async def _settle_refund(self, payment: StarPayment, reasons: set[str], done: Reconciliation) -> None:
        """A refund made outside the bot is recorded; one recorded here but not made at Telegram is undone."""
        if not payment.refunded and "payment_refund" not in reasons:
            return
        async with self._sessions() as session, session.begin():
            rows = await CreditRepository(session).for_charge(payment.charge_id)
            refunded_here = ledger.refunded(rows)
            if payment.refunded and not refunded_here:
                await ledger.take_back_payment(session, payment.charge_id, now=self._clock())
            elif not payment.refunded and refunded_here and self._clock() - max(
                    row.created_at for row in rows if row.reason == "payment_refund") >= REFUND_GRACE \
                    and await ledger.undo_payment_refund(session, payment.charge_id, now=self._clock()):
                done.undone.append(payment.charge_id)

    def credits_paid(self, payload: str, stars: int) -> int:
        """What a payment of `stars` for this invoice buys: its pack's credits, fewer if fewer Stars were paid."""
        bought, price = self.credits_bought(payload), stars_in(payload)
        return bought if price <= 0 or stars >= price else bought * max(0, stars) // price

    def credits_bought(self, payload: str) -> int:
        """What a paid invoice bought: the pack its payload names, even if the operator changed the packs since."""
        found = pack_of(payload, self.policy.packs)
        return found.credits if found else credits_in(payload)

    async def move_to_pool(self, user_id: int, chat_id: int, amount: int) -> int | None:
        """Move a user's bought credits into a group's pool: its new balance, or None if they have too few."""
        async with self._sessions() as session, session.begin():
            return await ledger.move_to_pool(session, user_id=user_id, chat_id=chat_id, amount=amount,
                                             now=self._clock())

    async def set_pool_cap(self, chat_id: int, cap: int | None) -> None:
        """Set how much each member may take from the group's pool a day (None: no limit)."""
        async with self._sessions() as session, session.begin():
            await ledger.set_pool_cap(session, chat_id=chat_id, cap=cap, now=self._clock())

    async def history(self, user_id: int, *, limit: int = 50) -> list[Entry]:
        """A user's ledger rows, newest first (for /history)."""
        async with self._sessions() as session:
            return await ledger.history(session, user_id, limit=limit)

    async def audit(self) -> list[str]:
        """What is wrong with the books (empty: every balance and job adds up)."""
        async with self._sessions() as session:
            return await ledger.audit(session)



# ---- the monthly plan (CREDIT_SUBSCRIPTION) ----------------------------------------------------------


class SubscriptionService:
    """Subscriptions for the handlers and reconciliation; each call commits its own transaction."""

    def __init__(self, sessions: Sessions, policy: CreditPolicy, *,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self._sessions = sessions
        self.plan = policy.subscription
        self._clock = clock

    async def grant(self, user_id: int, payload: str, charge_id: str, *, expires_at: datetime,
                    first: bool | None, stars: int | None = None) -> int:
        """Add a paid period's credits once per charge id: how many (0 when counted already or no plan named).

        `stars`: what Telegram's record says was paid; fewer Stars than the payload's plan buy fewer credits, as a
        pack's do (the payload alone is never trusted for more than was paid)."""
        plan = subscription.paid_plan(payload, stars)
        if plan is None:
            return 0
        async with self._sessions() as session, session.begin():
            added = await subscription.grant(session, user_id=user_id, plan=plan, charge_id=charge_id,
                                             expires_at=expires_at, first=first, now=self._clock())
        return plan.credits if added else 0

    async def status(self, user_id: int) -> subscription.SubscriptionStatus | None:
        """A user's subscription, its period and the plan credits left in it."""
        async with reading(self._sessions) as session:
            return await subscription.status(session, user_id, self._clock())

    async def set_canceled(self, user_id: int, canceled: bool) -> None:
        """Record that renewal was stopped or allowed again (Telegram agreed first)."""
        async with self._sessions() as session, session.begin():
            await subscription.set_canceled(session, user_id, canceled, self._clock())

    async def reconcile(self, payments: Iterable[StarPayment]) -> list[Recovered]:
        """Add the periods of subscription payments the bot never saw (not refunded ones), oldest first, once."""
        paid = sorted((payment for payment in payments if subscription.is_subscription(payment.payload)
                       and not payment.refunded and payment.date is not None),
                      key=lambda payment: (payment.date, payment.charge_id))
        async with reading(self._sessions) as session:
            known = await ledger.payments_recorded(session, [payment.charge_id for payment in paid])
        recovered = []
        for payment in paid:
            if subscription.GRANT in known.get(payment.charge_id, set()):
                continue
            period = timedelta(seconds=payment.subscription_period or subscription.PERIOD.total_seconds())
            credits = await self.grant(payment.user_id, payment.payload, payment.charge_id,
                                       expires_at=payment.date + period, first=None, stars=payment.stars)
            if credits:
                recovered.append(Recovered(payment.charge_id, payment.user_id, credits, payment.language))
        return recovered
