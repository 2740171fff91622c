"""What replicas on one database share: conversation state, who is alive, each chat's next send, who polls.

The repositories take a session and never commit, like the job store's. `PollerLock` is the
exception: it holds a connection of its own for as long as this process fetches updates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, or_, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.store.models import chat_sends_table, conversations_table, replicas_table

log = logging.getLogger(__name__)

#: key of the PostgreSQL advisory lock held by the replica that fetches updates ("botpoll" in ASCII)
POLLER_LOCK_KEY = 0x626F74706F6C6C


@dataclass(frozen=True)
class ConversationRow:
    """One piece of conversation state."""

    chat_id: int
    kind: str
    key: str
    data: dict[str, Any]
    due_at: datetime | None


def _insert(dialect: str) -> Any:
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


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
        statement = _insert(self._dialect)(table).values(chat_id=chat_id, kind=kind, key=key, data=data,
                                                                   expires_at=expires_at, due_at=due_at)
        await self._session.execute(statement.on_conflict_do_update(
            index_elements=[table.c.chat_id, table.c.kind, table.c.key],
            set_={"data": statement.excluded.data, "expires_at": statement.excluded.expires_at,
                  "due_at": statement.excluded.due_at}))

    async def add_if_absent(self, chat_id: int, kind: str, key: str, *, now: datetime, expires_at: datetime) -> bool:
        """Insert an empty row unless a live one is there: True when this call inserted it (a first use)."""
        table = conversations_table
        statement = _insert(self._dialect)(table).values(chat_id=chat_id, kind=kind, key=key, data={},
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


class ReplicaRepository:
    """The replicas seen recently, by heartbeat."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def beat(self, replica_id: str) -> None:
        """Record that this replica is alive now, on the database's clock (the one clock every replica reads)."""
        table = replicas_table
        dialect = self._session.dialect.name
        statement = _insert(dialect)(table).values(id=replica_id, seen_at=func.now())
        await self._session.execute(statement.on_conflict_do_update(
            index_elements=[table.c.id], set_={"seen_at": statement.excluded.seen_at}))

    async def alive(self, *, within: float) -> int:
        """How many replicas were seen in the last `within` seconds of the database's clock."""
        table = replicas_table
        since = func.now() - timedelta(seconds=within)
        return int(await self._session.scalar(select(func.count()).select_from(table).where(table.c.seen_at >= since))
                   or 0)

    async def forget(self, replica_id: str | None = None, *, before: datetime | None = None) -> None:
        """Remove this replica (it is stopping), or every replica not seen since `before`."""
        table = replicas_table
        condition = table.c.id == replica_id if replica_id is not None else table.c.seen_at < before
        await self._session.execute(delete(table).where(condition))


class ChatSendRepository:
    """Each chat's next free moment to post, on the database's clock (PostgreSQL only: SQLite is one process)."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def take(self, chat_id: int, *, interval: float, burst: int) -> float:
        """Take the chat's send slot for a call going now (a burst of `burst`, then one per `interval`
        seconds): 0 when taken, else the seconds until there is room (and nothing taken)."""
        # GCRA: tat is when the chat's bucket would be empty again; a call fits while it is at most
        # burst - 1 intervals ahead, and moves it one interval on
        params = {"chat": chat_id, "interval": interval, "tolerance": (burst - 1) * interval}
        taken = (await self._session.execute(text(
            "INSERT INTO chat_sends (chat_id, tat) VALUES (:chat, extract(epoch from now()) + :interval) "
            "ON CONFLICT (chat_id) DO UPDATE SET tat = greatest(chat_sends.tat, extract(epoch from now())) + :interval "
            "WHERE chat_sends.tat - extract(epoch from now()) <= :tolerance RETURNING 1"), params)).first()
        if taken is not None:
            return 0.0
        ahead = await self._session.scalar(text(
            "SELECT tat - extract(epoch from now()) - :tolerance FROM chat_sends WHERE chat_id = :chat"), params)
        return max(0.001, float(ahead or 0.0))

    async def forget_idle(self, *, older_than: float = 120.0) -> int:
        """Forget chats whose bucket has been full for a while."""
        table = chat_sends_table
        result = await self._session.execute(delete(table).where(
            table.c.tat < func.extract("epoch", func.now()) - older_than))
        return cast(CursorResult[Any], result).rowcount


class PollerLock:
    """Who fetches updates: the holder of a session-level advisory lock on a connection of its own.

    The lock lives as long as its connection: a replica that dies (even SIGKILLed) closes its socket
    and PostgreSQL releases the lock at once; a host that vanishes is noticed by TCP keep-alives
    within about 10 s. The holder checks its connection every `keepalive` seconds and gives up
    polling when the check fails. On SQLite (one process) this process is always the holder.
    """

    def __init__(self, engine: AsyncEngine, *, key: int = POLLER_LOCK_KEY, retry: float = 1.0,
                 keepalive: float = 1.0) -> None:
        self._engine = engine
        self._key = key
        self._retry = retry
        self._keepalive = keepalive
        self._connection: AsyncConnection | None = None
        self._shared = engine.dialect.name == "postgresql"

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait until this process holds the lock (True), or `stop` is set (False)."""
        if not self._shared:
            return not stop.is_set()
        while not stop.is_set():
            try:
                if await self._try():
                    return True
            except Exception as error:  # the database is unreachable: try again
                log.warning("could not try the poller lock (%s)", error)
                await self._drop()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._retry)
        return False

    async def _try(self) -> bool:
        if self._connection is None:
            connection = await self._engine.connect()
            self._connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
            # the server notices a vanished replica's connection (and frees its lock) within about 10 s
            await self._connection.execute(text(
                "SELECT set_config('tcp_keepalives_idle', '4', false), "
                "set_config('tcp_keepalives_interval', '2', false), set_config('tcp_keepalives_count', '3', false)"))
        held = await self._connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": self._key})
        return bool(held)

    async def watch(self, stop: asyncio.Event) -> bool:
        """Return when `stop` is set (True) or the lock is lost (False)."""
        if not self._shared:
            await stop.wait()
            return True
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._keepalive)
                continue
            try:
                await asyncio.wait_for(self._connection.execute(text("SELECT 1")), timeout=max(2.0, self._keepalive * 3))
            except Exception as error:
                log.warning("lost the connection holding the poller lock (%s)", error)
                await self._drop()
                return False
        return True

    async def release(self) -> None:
        """Give the lock back (closing its connection)."""
        if self._connection is None:
            return
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._connection.execute(
                text("SELECT pg_advisory_unlock(:key)"), {"key": self._key}), 5.0)
        await self._drop()

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            # invalidated, not returned to the pool: a pooled connection would keep a session lock
            with contextlib.suppress(Exception):
                await connection.invalidate()
            with contextlib.suppress(Exception):
                await connection.close()


__all__ = ["ChatSendRepository", "ConversationRepository", "ConversationRow", "PollerLock", "ReplicaRepository"]
