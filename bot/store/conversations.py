"""Conversation state by (chat, kind, key): what a conversation needs across messages, on whichever replica.

The repository takes a session and never commits, like the job store's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.db import dialect_insert
from bot.store.models import conversations_table


@dataclass(frozen=True)
class ConversationRow:
    """One piece of conversation state."""

    chat_id: int
    kind: str
    key: str
    data: dict[str, Any]
    due_at: datetime | None


class ConversationRepository:
    """Conversation state by (chat, kind, key), each row with an expiry; albums also with a due time."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    @property
    def _dialect(self) -> str:
        return self._session.dialect.name

    async def get(self, chat_id: int, kind: str, key: str, *, now: datetime, lock: bool = False) -> ConversationRow | None:
        """The live row, or None (also when it expired); `lock` holds it until the transaction ends."""
        table = conversations_table
        statement = select(table).where(table.c.chat_id == chat_id, table.c.kind == kind, table.c.key == key,
                                        table.c.expires_at > now)
        if lock:
            statement = statement.with_for_update()
        row = (await self._session.execute(statement)).mappings().first()
        return None if row is None else _row(row)

    async def put(self, chat_id: int, kind: str, key: str, data: dict[str, Any], *, expires_at: datetime,
                  due_at: datetime | None = None) -> None:
        """Insert or replace the row."""
        table = conversations_table
        statement = dialect_insert(self._dialect)(table).values(chat_id=chat_id, kind=kind, key=key, data=data,
                                                                   expires_at=expires_at, due_at=due_at)
        await self._session.execute(statement.on_conflict_do_update(
            index_elements=[table.c.chat_id, table.c.kind, table.c.key],
            set_={"data": statement.excluded.data, "expires_at": statement.excluded.expires_at,
                  "due_at": statement.excluded.due_at}))

    async def add_if_absent(self, chat_id: int, kind: str, key: str, *, now: datetime, expires_at: datetime,
                            data: dict[str, Any] | None = None) -> bool:
        """Insert a row (empty, or with `data`) unless a live one is there: True when this call inserted it (a
        first use)."""
        table = conversations_table
        statement = dialect_insert(self._dialect)(table).values(chat_id=chat_id, kind=kind, key=key, data=data or {},
                                                                   expires_at=expires_at)
        # an expired row counts as absent: take it over
        result = await self._session.execute(statement.on_conflict_do_update(
            index_elements=[table.c.chat_id, table.c.kind, table.c.key],
            set_={"expires_at": statement.excluded.expires_at, "data": statement.excluded.data},
            where=table.c.expires_at <= now))
        return cast(CursorResult[Any], result).rowcount == 1

    async def delete(self, chat_id: int, kind: str, key: str) -> bool:
        """Remove the row; True when there was one."""
        table = conversations_table
        result = await self._session.execute(
            delete(table).where(table.c.chat_id == chat_id, table.c.kind == kind, table.c.key == key))
        return cast(CursorResult[Any], result).rowcount > 0

    async def keep_newest(self, chat_id: int, kind: str, most: int) -> int:
        """Forget all but the `most` rows of this kind that expire last; how many were forgotten."""
        table = conversations_table
        older = (select(table.c.key).where(table.c.chat_id == chat_id, table.c.kind == kind)
                 .order_by(table.c.expires_at.desc(), table.c.key).offset(most))
        keys = list((await self._session.execute(older)).scalars())
        if not keys:
            return 0
        result = await self._session.execute(
            delete(table).where(table.c.chat_id == chat_id, table.c.kind == kind, table.c.key.in_(keys)))
        return cast(CursorResult[Any], result).rowcount

    async def take_due(self, kind: str, *, now: datetime, limit: int = 20) -> list[ConversationRow]:
        """Remove and return rows whose due time has come (rows another replica is taking are skipped)."""
        table = conversations_table
        statement = (select(table).where(table.c.kind == kind, table.c.due_at.is_not(None), table.c.due_at <= now)
                     .order_by(table.c.due_at).limit(limit).with_for_update(skip_locked=True))
        rows = [_row(row) for row in (await self._session.execute(statement)).mappings()]
        taken = []
        for row in rows:
            # the due time is checked again: an item that arrived meanwhile moved it
            result = await self._session.execute(delete(table).where(
                table.c.chat_id == row.chat_id, table.c.kind == kind, table.c.key == row.key,
                table.c.due_at <= now))
            if cast(CursorResult[Any], result).rowcount:
                taken.append(row)
        return taken

    async def next_due(self, kind: str) -> datetime | None:
        """The earliest due time of rows of this kind."""
        table = conversations_table
        return await self._session.scalar(select(func.min(table.c.due_at)).where(table.c.kind == kind))

    async def delete_expired(self, *, now: datetime) -> int:
        """Forget expired rows (an album never due-collected is not expired before its due time is handled)."""
        table = conversations_table
        result = await self._session.execute(delete(table).where(
            table.c.expires_at <= now, or_(table.c.due_at.is_(None), table.c.due_at <= now)))
        return cast(CursorResult[Any], result).rowcount


def _row(row: Any) -> ConversationRow:
    return ConversationRow(row["chat_id"], row["kind"], row["key"], dict(row["data"]), row["due_at"])


__all__ = ["ConversationRepository", "ConversationRow"]
