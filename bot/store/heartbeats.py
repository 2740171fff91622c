"""Who is alive and who polls: the replicas' heartbeats, and the lock held by the one that fetches updates.

`ReplicaRepository` takes a session and never commits, like the job store's. `PollerLock` holds a
connection of its own for as long as this process fetches updates.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, timedelta

from sqlalchemy import delete, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.store.db import dialect_insert
from bot.store.models import replicas_table

log = logging.getLogger(__name__)

#: key of the PostgreSQL advisory lock held by the replica that fetches updates ("botpoll" in ASCII)
POLLER_LOCK_KEY = 0x626F74706F6C6C


class ReplicaRepository:
    """The replicas seen recently, by heartbeat."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def beat(self, replica_id: str) -> None:
        """Record that this replica is alive now, on the database's clock (the one clock every replica reads)."""
        table = replicas_table
        dialect = self._session.dialect.name
        statement = dialect_insert(dialect)(table).values(id=replica_id, seen_at=func.now())
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


__all__ = ["POLLER_LOCK_KEY", "PollerLock", "ReplicaRepository"]
