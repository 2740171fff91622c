"""The inbox of Telegram updates: stored once per update_id, claimed under a lease, one chat at a time.

Like JobRepository, it takes a session and never commits. The claim takes, for each chat with
nothing in flight, that chat's oldest pending update, oldest chats first: so a chat's updates are
handled in order (a face swap's two photos), on whichever replica claims them, and a chat with a
backlog holds one handler, not all of them.

It is also the record of which updates made a job, in both intake modes: a job is stored with its
update marked handled (`mark_handled`, in the job's own transaction, for the handling named by
HANDLING_UPDATE), so an update Telegram sends again after a crash is known by its id, exactly: a
new button press under an old result is a new update and is handled. The mark names the handling
(one run of the update's handlers) that made it, and another handling of the same update cannot
mark it again: when two run at once (a replica that lost the poller lock or its lease still
finishing while another took the update over), the second job's transaction fails
(UpdateHandledElsewhere) and only one job is stored.
"""

from __future__ import annotations

import functools
import secrets
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Integer, Select, and_, bindparam, delete, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.models import inbox_table

PENDING = "pending"
DONE = "done"
DROPPED = "dropped"
#: dropped, and the first of its chat's flood: its chat is told once (by whoever claims it)
NOTICE = "notice"
_CLAIMABLE = (PENDING, NOTICE)


@dataclass(frozen=True)
class Handling:
    """One run of an update's handlers: the update, and a token no other run has."""

    update_id: int
    token: str = field(default_factory=lambda: secrets.token_hex(8))


#: the handling the running handler belongs to (set by the intake in the handler's own task): a job
#: stored while it is set marks that update handled in the same transaction
HANDLING_UPDATE: ContextVar[Handling | None] = ContextVar("HANDLING_UPDATE", default=None)


class UpdateHandledElsewhere(Exception):
    """Another handling of this update has made a job from it already: this one must make none."""


@dataclass(frozen=True)
class InboxItem:
    """One claimed update: its JSON as Telegram sent it, and what the claim is for."""

    update_id: int
    payload: dict[str, Any]
    chat_id: int | None
    state: str
    attempts: int

    def __str__(self) -> str:  # what a log line names it by (the payload holds what people wrote)
        return str(self.update_id)


def _free(table: Any, now: Any) -> Any:
    return and_(table.c.state.in_(_CLAIMABLE), or_(table.c.lease_until.is_(None), table.c.lease_until < now))


@functools.cache
def _pick_statement() -> Select[tuple[int]]:
    """Each idle chat's oldest claimable update, oldest first (bound: now, limit)."""
    now = bindparam("now", type_=inbox_table.c.received_at.type)
    candidate = inbox_table.alias("candidate")
    # an update without a chat is a lane of its own
    busy = inbox_table.alias("busy")
    lane = func.coalesce(candidate.c.chat_id, candidate.c.update_id)
    rank = func.row_number().over(partition_by=lane, order_by=candidate.c.update_id).label("rank")
    # a chat with an update leased and unexpired is in flight: none of its others may start
    in_flight = (select(func.coalesce(busy.c.chat_id, busy.c.update_id))
                 .where(busy.c.state.in_(_CLAIMABLE), busy.c.lease_until.is_not(None), busy.c.lease_until >= now))
    ranked = (select(candidate.c.update_id, rank)
              .where(candidate.c.state.in_(_CLAIMABLE), lane.not_in(in_flight)).subquery())
    # as in the job claim: FOR UPDATE only on the outer rows (PostgreSQL refuses it beside a window
    # function), the claim conditions repeated there; SQLite's BEGIN IMMEDIATE makes this the only writer
    return (select(inbox_table.c.update_id)
            .join(ranked, ranked.c.update_id == inbox_table.c.update_id)
            .where(ranked.c.rank == 1, _free(inbox_table, now))
            .order_by(inbox_table.c.received_at, inbox_table.c.update_id)
            .limit(bindparam("limit", type_=Integer))
            .with_for_update(of=inbox_table, skip_locked=True))


class InboxRepository:
    """Queries on the update inbox."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def add(self, update_id: int, payload: dict[str, Any], *, chat_id: int | None, sender_id: int | None,
                  state: str, now: datetime) -> bool:
        """Store an update unless its id is stored already; True when this call stored it."""
        values = {"update_id": update_id, "payload": payload, "chat_id": chat_id, "sender_id": sender_id,
                  "state": state, "attempts": 0, "lease_owner": None, "lease_until": None, "received_at": now,
                  "handled_at": None}
        insert = postgresql.insert if self._session.dialect.name == "postgresql" else sqlite.insert
        statement = insert(inbox_table).values(values).on_conflict_do_nothing(index_elements=["update_id"])
        result = await self._session.execute(statement.returning(inbox_table.c.update_id))
        return result.first() is not None

    async def mark_handled(self, handling: Handling, *, now: datetime) -> None:
        """Record that the update made a job in this handling: a webhook update stored already keeps its
        state and lease (it is still being handled); a polled one is stored as done. UpdateHandledElsewhere
        when another handling marked it first (on PostgreSQL a concurrent one waits for the first to end)."""
        values = {"update_id": handling.update_id, "payload": {}, "chat_id": None, "sender_id": None,
                  "state": DONE, "attempts": 1, "lease_owner": None, "lease_until": None, "received_at": now,
                  "handled_at": now, "handled_by": handling.token}
        insert = postgresql.insert if self._session.dialect.name == "postgresql" else sqlite.insert
        statement = insert(inbox_table).values(values)
        marked = await self._session.execute(statement.on_conflict_do_update(
            index_elements=["update_id"],
            set_={"handled_at": statement.excluded.handled_at, "handled_by": statement.excluded.handled_by},
            where=or_(inbox_table.c.handled_by.is_(None), inbox_table.c.handled_by == statement.excluded.handled_by),
        ).returning(inbox_table.c.update_id))
        if marked.first() is None:
            raise UpdateHandledElsewhere(f"update {handling.update_id} made a job in another handling")

    async def handled(self, update_id: int) -> bool:
        """Whether the update made a job (or, in webhook mode, was handled to the end)."""
        found = await self._session.scalar(
            select(inbox_table.c.update_id).where(inbox_table.c.update_id == update_id,
                                                  inbox_table.c.handled_at.is_not(None)))
        return found is not None

    async def held(self, *, chat_id: int | None, sender_id: int | None) -> tuple[int, int]:
        """Updates not yet handled of this chat and of this sender."""
        async def count(column: Any, value: int | None) -> int:
            if value is None:
                return 0
            found = await self._session.scalar(
                select(func.count()).where(column == value, inbox_table.c.state == PENDING))
            return int(found or 0)
        return await count(inbox_table.c.chat_id, chat_id), await count(inbox_table.c.sender_id, sender_id)

    async def dropped_since(self, chat_id: int, since: datetime) -> bool:
        """Whether an update of the chat was dropped since `since` (the chat is in a flood it was told about)."""
        found = await self._session.scalar(
            select(inbox_table.c.update_id).where(inbox_table.c.chat_id == chat_id,
                                                  inbox_table.c.state.in_((DROPPED, NOTICE)),
                                                  inbox_table.c.received_at >= since).limit(1))
        return found is not None

    async def claim(self, *, owner: str, now: datetime, lease_for: timedelta, limit: int) -> list[InboxItem]:
        """Lease up to `limit` updates, at most one per chat, to `owner`; each claim counts an attempt."""
        if limit <= 0:
            return []
        ids = list((await self._session.scalars(_pick_statement(), {"now": now, "limit": limit})).all())
        if not ids:
            return []
        result = await self._session.execute(
            update(inbox_table).where(inbox_table.c.update_id.in_(ids))
            .values(lease_owner=owner, lease_until=now + lease_for, attempts=inbox_table.c.attempts + 1)
            .returning(inbox_table.c.update_id, inbox_table.c.payload, inbox_table.c.chat_id, inbox_table.c.state,
                       inbox_table.c.attempts))
        claimed = {row.update_id: InboxItem(row.update_id, row.payload, row.chat_id, row.state, row.attempts)
                   for row in result}
        return [claimed[update_id] for update_id in ids]

    async def finish(self, update_id: int, *, owner: str, now: datetime, state: str = DONE) -> bool:
        """Mark a claimed update handled, or `state` (its JSON is no longer needed); False if `owner` lost it."""
        result = await self._session.execute(
            update(inbox_table).where(inbox_table.c.update_id == update_id, inbox_table.c.lease_owner == owner)
            .values(state=state, payload={}, lease_owner=None, lease_until=None, handled_at=now)
            .returning(inbox_table.c.update_id))
        return result.first() is not None

    async def renew(self, update_id: int, *, owner: str, until: datetime) -> bool:
        """Extend `owner`'s lease of an update being handled; False once it is finished or was taken over."""
        result = await self._session.execute(
            update(inbox_table).where(inbox_table.c.update_id == update_id, inbox_table.c.lease_owner == owner,
                                      inbox_table.c.state.in_(_CLAIMABLE))
            .values(lease_until=until).returning(inbox_table.c.update_id))
        return result.first() is not None

    async def release_all(self, *, owner: str) -> int:
        """Give up every lease `owner` holds (at start-up: what a previous run of this worker left)."""
        result = await self._session.execute(
            update(inbox_table).where(inbox_table.c.lease_owner == owner, inbox_table.c.state.in_(_CLAIMABLE))
            .values(lease_owner=None, lease_until=None).returning(inbox_table.c.update_id))
        return len(result.all())

    async def forget(self, *, before: datetime) -> int:
        """Delete handled or dropped updates received before `before` (Telegram stops retrying long before)."""
        result = await self._session.execute(
            delete(inbox_table).where(inbox_table.c.state.in_((DONE, DROPPED)), inbox_table.c.received_at < before)
            .returning(inbox_table.c.update_id))
        return len(result.all())

    async def next_free_at(self) -> datetime | None:
        """When a leased update's lease runs out first (None when nothing waits on one)."""
        found: datetime | None = await self._session.scalar(
            select(func.min(inbox_table.c.lease_until)).where(inbox_table.c.state.in_(_CLAIMABLE)))
        return found

    async def pending(self) -> int:
        """Updates stored and not yet handled."""
        return int(await self._session.scalar(
            select(func.count()).where(inbox_table.c.state.in_(_CLAIMABLE))) or 0)
