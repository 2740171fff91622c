"""Engine, sessions and schema migrations for the job store."""

from __future__ import annotations

import contextlib
import functools
import sqlite3
import time
from collections.abc import AsyncIterator, Callable
from importlib import resources
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import URL, Connection, event, make_url, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine


def _migrations_dir() -> Path:
    """The top-level migrations/ folder, which the wheel ships inside the package as bot.migrations."""
    try:
        # a directory: Alembic reads the scripts from one (a wheel installs unzipped)
        return Path(str(resources.files("bot.migrations")))
    except ModuleNotFoundError:  # a checkout run from PYTHONPATH, or installed before the folder moved
        return Path(__file__).resolve().parents[2] / "migrations"


#: an installed wheel migrates as a checkout does
MIGRATIONS_DIR = _migrations_dir()

# Async drivers for the URLs operators are likely to write.
_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgres": "postgresql+asyncpg",
    "postgresql": "postgresql+asyncpg",
}

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Key of the PostgreSQL advisory lock that serialises migrations ("botmigr" in ASCII).
MIGRATION_LOCK_KEY = 0x626F746D696772


def dialect_insert(dialect: str) -> Any:
    """The dialect's INSERT, the one with ON CONFLICT (PostgreSQL's or SQLite's)."""
    return postgresql.insert if dialect == "postgresql" else sqlite.insert


def async_url(url: str | URL) -> URL:
    """Parse a database URL, choosing the async driver when none is named."""
    parsed = make_url(url)
    return parsed.set(drivername=_ASYNC_DRIVERS.get(parsed.drivername, parsed.drivername))


def create_engine(url: str | URL) -> AsyncEngine:
    """Create the async engine, tuned for SQLite (one writer at a time) or PostgreSQL."""
    parsed = async_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _create_sqlite_engine(parsed)
    if parsed.get_backend_name() == "postgresql":
        return create_async_engine(
            parsed, pool_pre_ping=True, pool_size=5, max_overflow=10, pool_recycle=1800
        )
    return create_async_engine(parsed, pool_pre_ping=True)


def _create_sqlite_engine(url: URL) -> AsyncEngine:
    """SQLite (aiosqlite) with WAL, a busy timeout, foreign keys and BEGIN IMMEDIATE."""
    database = url.database or ""
    if database and database != ":memory:" and not database.startswith("file:"):
        Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Stop the driver from issuing its own (deferred) BEGIN; `_on_begin` issues ours.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            _switch_to_wal(cursor)
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
        finally:
            cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Connection) -> None:
        # Take the write lock up front: a claim's read and its update can then never interleave
        # with another writer's, and lock waits happen at BEGIN where busy_timeout covers them.
        # A connection for reads alone (`reading`) takes none: each read sees the last commit (WAL).
        if not connection.get_execution_options().get(_READ_ONLY):
            connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def _switch_to_wal(cursor: Any) -> None:
    """Put the file in WAL mode (a lasting property of the file: a no-op after the first time)."""
    deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as error:
            # While another connection switches a brand-new file, SQLite answers "locked" at once
            # instead of calling the busy handler. Only the first connections to a new file get here,
            # so a short blocking pause is an acceptable price.
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.005)


#: opens a database connection, used as `async with sessions() as session, session.begin():`
Sessions = Callable[[], AsyncConnection]
_READ_ONLY = "bot_read_only"


@contextlib.asynccontextmanager
async def reading(sessions: Sessions) -> AsyncIterator[AsyncConnection]:
    """A connection for reads alone. On SQLite it takes no write lock, so a read never waits for
    writers nor makes them wait (it sees the last commit); on PostgreSQL it is any connection."""
    async with sessions() as connection:
        await connection.execution_options(**{_READ_ONLY: True})
        yield connection


def session_factory(engine: AsyncEngine) -> Sessions:
    """Core connections: every query here is a Core statement, and an ORM session around each only
    added its bookkeeping to every statement (about 4% of the bot's CPU per job under load)."""
    return engine.connect


def alembic_config(connection: Connection | None = None) -> Config:
    """An Alembic config for this project's migrations, optionally bound to an open connection."""
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


@functools.cache
def head_revision() -> str:
    """The newest revision of the shipped migrations (read from their files once per process)."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migrations have no revision"
    return head


async def schema_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at; None before the first migration."""
    try:
        async with engine.connect() as connection:
            await connection.execution_options(**{_READ_ONLY: True})
            return (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalar()
    except DBAPIError:  # no alembic_version table yet
        return None


async def migrate(url: str | URL, revision: str = "head") -> None:
    """Upgrade the database schema to `revision` (default: the newest); safe inside a running loop."""
    engine = create_engine(url)
    try:
        if revision == "head" and await schema_revision(engine) == head_revision():
            return  # the common start-up: one query instead of Alembic's run (and its lock on PostgreSQL)
        async with engine.begin() as connection:
            if connection.dialect.name == "postgresql":
                # Replicas starting together migrate one at a time; the later ones find it done.
                # (On SQLite, BEGIN IMMEDIATE already makes this the only writer.)
                await connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
            await connection.run_sync(
                lambda sync_connection: command.upgrade(alembic_config(sync_connection), revision)
            )
    finally:
        await engine.dispose()
