"""The one-trip aiosqlite adapter on a real SQLite file: one trip per statement, and SQLAlchemy sees no difference."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiosqlite
import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, exc, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.store.db import create_engine
from bot.store.sqlite_driver import OneTripConnection

metadata = MetaData()
things = Table("things", metadata, Column("id", Integer, primary_key=True), Column("name", String, unique=True))


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(f"sqlite:///{tmp_path / 'one-trip.db'}")
    async with engine.begin() as connection:
        await connection.run_sync(metadata.create_all)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call aiosqlite runs in a connection's thread from now on, by name."""
    seen: list[str] = []
    original = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn, *args, **kwargs):  # type: ignore[no-untyped-def]
        seen.append(getattr(fn, "__name__", repr(fn)))
        return await original(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return seen


async def test_the_engine_uses_the_one_trip_adapter(engine):
    async with engine.connect() as connection:
        raw = await connection.get_raw_connection()
        # reaching into SQLAlchemy's adapter classes here is the point: an upgrade that renames what
        # sqlite_driver.py subclasses would make the engine fall back or break, and this notices
        assert isinstance(raw.dbapi_connection, OneTripConnection)


async def test_each_statement_is_one_trip_with_its_rows(engine, trips):
    async with engine.begin() as connection:
        trips.clear()  # BEGIN IMMEDIATE, sent at the start of the transaction, is a statement too
        inserted = await connection.execute(insert(things).returning(things.c.id), {"name": "a"})
        assert inserted.scalar_one() == 1
        assert trips == ["_statement"]
        many = await connection.execute(insert(things), [{"name": "b"}, {"name": "c"}])  # executemany
        assert many.rowcount == 2
        changed = await connection.execute(update(things).where(things.c.id > 1).values(name=things.c.name + "!"))
        assert changed.rowcount == 2
        rows = (await connection.execute(select(things.c.name).order_by(things.c.id))).scalars().all()
        assert rows == ["a", "b!", "c!"]
        assert trips == ["_statement"] * 4


async def test_fetching_in_parts_and_empty_results_work(engine):
    async with engine.begin() as connection:
        await connection.execute(insert(things), [{"name": str(number)} for number in range(5)])
        result = await connection.execute(select(things.c.name).order_by(things.c.id))
        assert result.fetchone() == ("0",)
        assert result.fetchmany(2) == [("1",), ("2",)]
        assert result.fetchall() == [("3",), ("4",)]
        nothing = await connection.execute(select(things).where(things.c.id < 0))
        assert nothing.fetchall() == []
        assert (await connection.execute(text("PRAGMA foreign_keys"))).scalar_one() == 1


async def test_errors_and_rollbacks_behave_as_before(engine):
    async with engine.begin() as connection:
        await connection.execute(insert(things), {"name": "same"})
    with pytest.raises(exc.IntegrityError):
        async with engine.begin() as connection:
            await connection.execute(insert(things), {"name": "other"})
            await connection.execute(insert(things), {"name": "same"})
    with pytest.raises(exc.OperationalError):
        async with engine.connect() as connection:
            await connection.execute(text("SELECT nothing FROM nowhere"))
    async with engine.connect() as connection:  # the failed transaction left nothing behind
        assert (await connection.execute(select(things.c.name))).scalars().all() == ["same"]
