"""aiosqlite for SQLAlchemy with one trip to the connection's thread per statement.

aiosqlite runs each SQLite connection in a thread of its own, and every call a cursor makes is a
round trip to it: SQLAlchemy's adapter makes four per statement (open a cursor, execute, fetch the
rows, close). Each trip wakes two threads and passes the GIL back and forth, and at about twelve
statements a job that was a good part of the bot's CPU time on SQLite (bench/README.md). This
adapter runs the whole statement in one trip and hands SQLAlchemy what it left behind.

It plugs in through create_engine's documented `module` argument, but subclasses SQLAlchemy's
aiosqlite adapter classes, which are not a public API: tests/integration/test_sqlite_driver.py pins
what it relies on.
"""

from __future__ import annotations

import collections
import sqlite3
from typing import Any

import aiosqlite
from sqlalchemy.dialects.sqlite.aiosqlite import (
    AsyncAdapt_aiosqlite_connection,
    AsyncAdapt_aiosqlite_cursor,
    AsyncAdapt_aiosqlite_dbapi,
)


class Outcome:
    """What a finished statement left behind: its rows and the cursor attributes SQLAlchemy reads."""

    __slots__ = ("description", "lastrowid", "rowcount", "rows")
    arraysize = 1

    def __init__(self, description: Any = None, rowcount: int = -1, lastrowid: int | None = None,
                 rows: list[Any] | None = None) -> None:
        self.description = description
        self.rowcount = rowcount
        self.lastrowid = lastrowid
        self.rows = rows or []

    def close(self) -> None:
        """Nothing to release: the SQLite cursor was closed in the connection's thread."""


def _statement(connection: sqlite3.Connection, operation: str, parameters: Any, many: bool) -> Outcome:
    """Execute, fetch and close in the connection's thread (the one trip)."""
    cursor = connection.cursor()
    try:
        if many:
            cursor.executemany(operation, parameters)
        elif parameters is None:
            cursor.execute(operation)
        else:
            cursor.execute(operation, parameters)
        rows = cursor.fetchall() if cursor.description else []
        return Outcome(cursor.description, cursor.rowcount, cursor.lastrowid, rows)
    finally:
        cursor.close()


class OneTripCursor(AsyncAdapt_aiosqlite_cursor):
    """A cursor that holds no aiosqlite cursor: each statement is one trip, its rows come back with it."""

    __slots__ = ()
    _awaitable_cursor_close = False  # the SQLite cursor is closed already; close() needs no trip

    def _make_new_cursor(self, connection: Any) -> Outcome:
        return Outcome()

    def _aenter_cursor(self, cursor: Any) -> Any:
        return cursor

    async def _one_trip(self, operation: str, parameters: Any, many: bool) -> Outcome:
        connection: aiosqlite.Connection = self._connection  # type: ignore[assignment]
        async with self._adapt_connection._execute_mutex:
            outcome = await connection._execute(_statement, connection._conn, operation, parameters, many)
        self._cursor = outcome  # type: ignore[assignment]
        self._rows = collections.deque(outcome.rows)
        return outcome

    async def _execute_async(self, operation: Any, parameters: Any) -> Any:
        return await self._one_trip(operation, parameters, many=False)

    async def _executemany_async(self, operation: Any, seq_of_parameters: Any) -> Any:
        return await self._one_trip(operation, seq_of_parameters, many=True)


class OneTripConnection(AsyncAdapt_aiosqlite_connection):
    """SQLAlchemy's aiosqlite connection adapter, handing out OneTripCursors."""

    __slots__ = ()
    _cursor_cls = OneTripCursor


class OneTripDBAPI(AsyncAdapt_aiosqlite_dbapi):
    """The DBAPI module SQLAlchemy's aiosqlite dialect uses, with OneTripConnections."""

    def connect(self, *args: Any, **kwargs: Any) -> OneTripConnection:
        adapted = super().connect(*args, **kwargs)
        return OneTripConnection(self, adapted._connection)


def one_trip_dbapi() -> OneTripDBAPI:
    """The `module` to give create_async_engine for a sqlite+aiosqlite URL."""
    return OneTripDBAPI(aiosqlite, sqlite3)
