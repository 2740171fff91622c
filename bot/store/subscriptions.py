"""The subscriptions table: one row per subscriber, the period paid for and whether it renews. The caller owns the transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.db import dialect_insert
from bot.store.models import subscriptions_table


@dataclass(frozen=True)
class SubscriptionRecord:
    """A user's subscription as stored."""

    user_id: int
    #: its first payment's charge id: what names it to editUserStarSubscription
    charge_id: str
    #: the payment of the current period
    period_charge_id: str
    credits: int
    stars: int
    expires_at: datetime
    canceled: bool


class SubscriptionRepository:
    """Read and write subscriptions."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def get(self, user_id: int) -> SubscriptionRecord | None:
        """A user's subscription, if they ever had one."""
        row = (await self._session.execute(
            select(subscriptions_table).where(subscriptions_table.c.user_id == user_id))).first()
        if row is None:
            return None
        return SubscriptionRecord(row.user_id, row.charge_id, row.period_charge_id, int(row.credits), row.stars,
                                  row.expires_at, bool(row.canceled))

    async def put(self, record: SubscriptionRecord, *, now: datetime) -> None:
        """Write a user's subscription (made, or moved on to a new period)."""
        values = {"charge_id": record.charge_id, "period_charge_id": record.period_charge_id,
                  "credits": record.credits, "stars": record.stars, "expires_at": record.expires_at,
                  "canceled": record.canceled, "updated_at": now}
        statement = dialect_insert(self._session.dialect.name)(subscriptions_table).values(
            user_id=record.user_id, **values)
        await self._session.execute(statement.on_conflict_do_update(index_elements=["user_id"], set_=values))

    async def set_canceled(self, user_id: int, canceled: bool, *, now: datetime) -> None:
        """Record that renewal was stopped (or allowed again) through the bot."""
        await self._session.execute(update(subscriptions_table).where(subscriptions_table.c.user_id == user_id)
                                    .values(canceled=canceled, updated_at=now))
