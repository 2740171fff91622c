"""What /readyz and /metrics read from the database: shared, cached, bounded, and without write locks.

A scrape must never slow the bot down nor hang on it. Each read goes through a `SharedRead`: while
a result is fresh (a few seconds) every request gets it; otherwise one read runs for all requests
at once, and a request waits for it at most `timeout` seconds (the read goes on in the background,
and the next request joins it rather than starting another). The reads themselves take no write
lock (on SQLite no `BEGIN IMMEDIATE`: WAL lets them see the last commit while a writer holds the
lock), and on PostgreSQL the statement is also cut off by `statement_timeout`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from sqlalchemy import text

from bot.store import ACTIVE_STATES, JobRepository
from bot.store.db import Sessions, reading

T = TypeVar("T")

#: how long a database read may hold a request up
READ_TIMEOUT_S = 2.0
#: how long a result is served again before the database is read anew
FRESH_FOR_S = 5.0


class SharedRead(Generic[T]):
    """One read shared by every request: reused while fresh, at most one at a time, waited for at most `timeout`."""

    def __init__(self, read: Callable[[], Awaitable[T]], *, fresh_for: float = FRESH_FOR_S,
                 timeout: float = READ_TIMEOUT_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._read = read
        self._fresh_for = fresh_for
        self._timeout = timeout
        self._clock = clock
        self._value: T | None = None
        self._read_at: float | None = None
        self._running: asyncio.Task[T] | None = None

    async def get(self) -> T:
        """The fresh result, or a new one; TimeoutError when the read takes longer than `timeout`."""
        if self._read_at is not None and self._clock() - self._read_at < self._fresh_for:
            return self._value  # type: ignore[return-value]
        if self._running is None:
            self._running = asyncio.create_task(self._read_now())
            # a read nobody waits for any more may still fail: its error is taken, not left to asyncio's warning
            self._running.add_done_callback(lambda task: task.cancelled() or task.exception())
        running = self._running
        # asyncio.wait, not wait_for: a late read is left to finish by itself, never waited on to cancel
        done, _ = await asyncio.wait([running], timeout=self._timeout)
        if not done:
            raise TimeoutError(f"no answer from the database within {self._timeout:g} s")
        return running.result()

    async def _read_now(self) -> T:
        try:
            value = await self._read()
        finally:
            self._running = None
        self._value, self._read_at = value, self._clock()
        return value


def _bounded(seconds: float) -> str:
    return f"SET LOCAL statement_timeout = {int(seconds * 1000)}"


async def ping_database(sessions: Sessions) -> None:
    """A read that proves the database answers."""
    async with reading(sessions) as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(text(_bounded(READ_TIMEOUT_S)))
        await connection.execute(text("SELECT 1"))


async def unfinished_jobs(sessions: Sessions) -> dict[str, int]:
    """Unfinished jobs by state (the whole deployment's)."""
    async with reading(sessions) as connection:
        if connection.dialect.name == "postgresql":
            await connection.execute(text(_bounded(READ_TIMEOUT_S)))
        counts = await JobRepository(connection).counts_by_state(ACTIVE_STATES)
    return {state.value: count for state, count in counts.items()}
