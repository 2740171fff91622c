"""Database fixtures: every test gets an empty SQLite file and, when configured, an empty PostgreSQL schema.

PostgreSQL tests run on the server named by TEST_POSTGRES_URL (CONTRIBUTING.md: a throwaway container or
a cluster of its own; CI starts one with .ci/postgres.sh). Without it they are skipped on a developer's
machine and fail under CI, so CI can never pass by silently testing SQLite alone.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import uuid
from collections.abc import AsyncIterator, Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from playwright.async_api import Browser, async_playwright
from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.store import create_engine, migrate
from tests.harness.browser import chromium_or_fail

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


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite file migrated to the newest schema once per run (per xdist worker); tests get copies of it."""
    path = tmp_path_factory.mktemp("template") / "store.db"
    _run_in_own_loop(migrate(f"sqlite+aiosqlite:///{path}"))
    return path


def migrated_sqlite(template: Path, path: Path) -> str:
    """A copy of the migrated template at `path`, as a database URL (a copy takes a millisecond, a migration tenths)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template, path)
    return f"sqlite+aiosqlite:///{path}"


@pytest.fixture(scope="session")
def postgres_template(postgres_database: str) -> Iterator[str]:
    """The name of a database migrated to the newest schema once per run, next to this run's own database."""
    name = f"{make_url(postgres_database).database}_template"
    base_url = require_postgres_url()
    _run_in_own_loop(_execute(base_url, f'CREATE DATABASE "{name}"'))
    try:
        _run_in_own_loop(migrate(make_url(postgres_database).set(database=name).render_as_string(hide_password=False)))
        yield name
    finally:
        _run_in_own_loop(_execute(base_url, _END_OWN_CONNECTIONS.format(database=f"'{name}'"),
                                  f'DROP DATABASE IF EXISTS "{name}"'))


async def _copy_postgres_template(url: str, template: str) -> None:
    """Make this run's database a fresh copy of the migrated template (CREATE DATABASE ... TEMPLATE)."""
    name = make_url(url).database
    await _execute(require_postgres_url(), _END_OWN_CONNECTIONS.format(database=f"'{name}'"),
                   f'DROP DATABASE IF EXISTS "{name}"', f'CREATE DATABASE "{name}" TEMPLATE "{template}"')


@pytest.fixture
async def migrated_url(request: pytest.FixtureRequest, db_url: str) -> str:
    """URL of a fresh database already migrated to the newest schema (a copy of a template migrated once)."""
    if make_url(db_url).get_backend_name() == "sqlite":
        return migrated_sqlite(request.getfixturevalue("sqlite_template"), Path(make_url(db_url).database or ""))
    await _copy_postgres_template(db_url, request.getfixturevalue("postgres_template"))
    return db_url


@pytest.fixture
async def store_engine(migrated_url: str) -> AsyncIterator[AsyncEngine]:
    """An engine on a freshly migrated database, disposed after the test."""
    engine = create_engine(migrated_url)
    try:
        yield engine
    finally:
        await engine.dispose()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium through Playwright (tests/harness/browser.py); fails the test when there is none."""
    async with async_playwright() as playwright:
        executable = chromium_or_fail(playwright.chromium.executable_path)
        # Chromium refuses to run as root with its sandbox (CI machines, containers)
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = await playwright.chromium.launch(executable_path=executable, args=args)
        try:
            yield browser
        finally:
            await browser.close()
