"""What the chat side asks of credits, each call one transaction: balances, purchases, refunds, pools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bot.credits import ledger
from bot.credits.packs import Pack
from bot.credits.prices import Prices
from bot.operations.catalogue import Operation
from bot.store.credits import Entry
from bot.store.db import Sessions

GROUP_TYPES = frozenset({"group", "supergroup"})


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class CreditPolicy:
    """The operator's terms: prices, the daily free allowance, the packs on sale."""

    operations: Mapping[str, Operation]
    prices: Prices = field(default_factory=Prices)
    free_per_day: int = 0
    packs: tuple[Pack, ...] = field(default_factory=tuple)

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

    async def balance(self, user_id: int, *, chat_id: int, chat_type: str) -> ledger.Balance:
        """A user's credits, today's free allowance left, and this group's pool."""
        async with self._sessions() as session:
            return await ledger.balance(session, user_id=user_id, pool_chat_id=self.policy.pool_of(chat_id, chat_type),
                                        now=self._clock(), free_per_day=self.policy.free_per_day)

    async def purchase(self, user_id: int, pack: Pack, charge_id: str) -> bool:
        """Add a paid pack once per charge id; False when this payment was already counted."""
        async with self._sessions() as session, session.begin():
            return await ledger.purchase(session, user_id=user_id, pack=pack, charge_id=charge_id, now=self._clock())

    async def refund_payment(self, charge_id: str,
                             refund_stars: Callable[[int], Awaitable[None]]) -> ledger.PaymentRefund:
        """Take a payment's credits back and, in the same transaction, refund its Stars (`refund_stars(user_id)`).

        If refunding the Stars raises, the credits stay where they were. A crash after Telegram refunded
        but before the commit leaves the credits; repeating /refund then finds the charge already
        refunded at Telegram (the caller treats that as done) and takes them.
        """
        async with self._sessions() as session, session.begin():
            outcome = await ledger.take_back_payment(session, charge_id, now=self._clock())
            if outcome.status == "ok" and outcome.user_id is not None:
                await refund_stars(outcome.user_id)
            return outcome

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
