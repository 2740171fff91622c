"""What the chat side asks of credits, each call one transaction: balances, purchases, refunds, pools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.credits import ledger, subscription
from bot.credits.packs import Pack, credits_in, pack_of
from bot.credits.prices import Prices
from bot.credits.subscription import SubscriptionPlan
from bot.operations.catalogue import Operation
from bot.store.credits import Entry
from bot.store.db import Sessions, reading

GROUP_TYPES = frozenset({"group", "supergroup"})


def _utcnow() -> datetime:
    return datetime.now(UTC)


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
                 clock: Callable[[], datetime] = _utcnow) -> None:
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
        """Refund a payment's Stars (`refund_stars(user_id)`) if its credits are unspent, then take them back.

        Telegram is called between two short transactions, never inside one: no lock of the ledger waits
        for a round trip. If refunding the Stars raises, nothing changes. Credits spent during the round
        trip are gone; what is left of the payment's is taken. A crash after Telegram refunded but before
        the second commit leaves the credits until reconciliation (or a repeated /refund, which finds the
        charge refunded at Telegram and treats that as done) records the refund.
        """
        async with reading(self._sessions) as session:
            outcome = await ledger.payment_refundable(session, charge_id)
        if outcome.status != "ok" or outcome.user_id is None:
            return outcome
        await refund_stars(outcome.user_id)
        async with self._sessions() as session, session.begin():
            return await ledger.take_back_payment(session, charge_id, now=self._clock())

    async def reconcile(self, payments: Iterable[StarPayment]) -> list[Recovered]:
        """Bring the ledger in line with Telegram's record of Stars payments; the purchases it had missed.

        A payment with no purchase row is credited (keyed by its charge id, as the normal path is: only
        one of them, on one replica, ever adds it), a refunded one has its credits taken back, once. The
        order of `payments` does not matter. One short transaction per charge that needs a change.
        """
        listed = {payment.charge_id: payment for payment in payments}
        async with reading(self._sessions) as session:
            known = await ledger.payments_recorded(session, listed)
        recovered = []
        for charge_id, payment in sorted(listed.items()):
            reasons = known.get(charge_id, set())
            credits = self.credits_bought(payment.payload)
            if "purchase" not in reasons and credits > 0:
                async with self._sessions() as session, session.begin():
                    added = await ledger.purchase(session, user_id=payment.user_id, pack=Pack(credits, payment.stars),
                                                  charge_id=charge_id, now=self._clock())
                if added and not payment.refunded:
                    recovered.append(Recovered(charge_id, payment.user_id, credits, payment.language))
            if payment.refunded and "payment_refund" not in reasons:
                async with self._sessions() as session, session.begin():
                    await ledger.take_back_payment(session, charge_id, now=self._clock())
        return recovered

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
                 clock: Callable[[], datetime] = _utcnow) -> None:
        self._sessions = sessions
        self.plan = policy.subscription
        self._clock = clock

    async def grant(self, user_id: int, payload: str, charge_id: str, *, expires_at: datetime,
                    first: bool | None) -> int:
        """Add a paid period's credits once per charge id: how many (0 when counted already or no plan named)."""
        plan = subscription.plan_in(payload)
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
                                       expires_at=payment.date + period, first=None)
            if credits:
                recovered.append(Recovered(payment.charge_id, payment.user_id, credits, payment.language))
        return recovered
