"""Database fixtures: every test gets an empty SQLite file and, when configured, an empty PostgreSQL schema.

PostgreSQL tests run on the server named by TEST_POSTGRES_URL (CONTRIBUTING.md: a throwaway container or
a cluster of its own; CI starts one with .ci/postgres.sh). Without it they are skipped on a developer's
machine and fail under CI, so CI can never pass by silently testing SQLite alone.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.store import create_engine, migrate

POSTGRES_URL_ENV = "TEST_POSTGRES_URL"


def running_under_ci() -> bool:
    """True when the CI variable is set to anything but an explicit no."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_postgres_url() -> str:
    """The PostgreSQL test URL; fails the test under CI and skips it elsewhere when unset."""
    url = os.environ.get(POSTGRES_URL_ENV, "").strip()
    if url:
        return url
    if running_under_ci():
        pytest.fail(
            f"{POSTGRES_URL_ENV} is not set but CI is: PostgreSQL tests must run in CI. "
            "Start a server as CONTRIBUTING.md shows, or on a CI machine with `.ci/postgres.sh`.",
            pytrace=False,
        )
    pytest.skip(f"PostgreSQL tests need {POSTGRES_URL_ENV} (see CONTRIBUTING.md)")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Apply the fail-under-CI/skip-elsewhere rule to every test marked `postgres`."""
    if item.get_closest_marker("postgres") is not None:
        require_postgres_url()


# Ends this role's other connections to a database (autovacuum gives way to DDL by itself).
_END_OWN_CONNECTIONS = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
    " WHERE datname = {database} AND usename = current_user AND pid <> pg_backend_pid()"
)


def _asyncpg_dsn(url: str) -> str:
    """A plain libpq-style DSN for asyncpg (no SQLAlchemy driver suffix)."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


async def _execute(url: str, *statements: str) -> None:
    """Run statements on their own asyncpg connection."""
    connection = await asyncpg.connect(_asyncpg_dsn(url))
    try:
        for statement in statements:
            await connection.execute(statement)
    finally:
        await connection.close()


def _run_in_own_loop(coroutine: Coroutine[Any, Any, None]) -> None:
    """Run a coroutine to completion on a fresh loop in a thread, clear of pytest-asyncio's loops."""
    with ThreadPoolExecutor(max_workers=1) as executor:
        executor.submit(asyncio.run, coroutine).result()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A database of this test run's own on the TEST_POSTGRES_URL server, dropped at the end."""
    base_url = require_postgres_url()
    name = f"bot_test_{uuid.uuid4().hex[:16]}"  # unique: runs sharing a server never collide
    _run_in_own_loop(_execute(base_url, f'CREATE DATABASE "{name}"'))
    try:
        yield (
            make_url(base_url)
            .set(drivername="postgresql+asyncpg", database=name)
            .render_as_string(hide_password=False)
        )
    finally:
        # Not WITH (FORCE): that needs the right to end autovacuum workers too. DROP DATABASE stops
        # those itself and waits a few seconds for the connections ended here to go.
        _run_in_own_loop(
            _execute(
                base_url,
                _END_OWN_CONNECTIONS.format(database=f"'{name}'"),
                f'DROP DATABASE IF EXISTS "{name}"',
            )
        )


async def _empty_postgres_database(url: str) -> None:
    """Drop what the previous test built: milliseconds, where CREATE DATABASE takes tenths of a second."""
    await _execute(
        url,
        # A connection a failed test left open would hold locks that DROP SCHEMA waits on forever.
        _END_OWN_CONNECTIONS.format(database="current_database()"),
        "DROP SCHEMA IF EXISTS public CASCADE",
        "CREATE SCHEMA public",
    )


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """URL of an empty database of either backend, fresh for each test."""
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    url: str = request.getfixturevalue("postgres_database")
    await _empty_postgres_database(url)
    return url


@pytest.fixture
async def migrated_url(db_url: str) -> str:
    """URL of a fresh database already migrated to the newest schema."""
    await migrate(db_url)
    return db_url


@pytest.fixture
async def store_engine(migrated_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on a freshly migrated database, disposed after the test."""
    engine = create_engine(migrated_url)
    try:
        yield engine
    finally:
        await engine.dispose()
