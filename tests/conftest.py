"""Session start-up and database fixtures: every test gets an empty SQLite file and an empty PostgreSQL schema.

When the session starts, tests/harness/provision.py finds or installs what the tests need: a browser, and a
PostgreSQL server (the one TEST_POSTGRES_URL names, else a throwaway cluster of the suite's own). What a machine
lacks and cannot install (no root) skips the tests that need it, with one line at the end saying what to install;
under CI those tests fail instead, so CI can never pass by skipping them.
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
from tests.harness.provision import POSTGRES_URL_ENV, Provisioned, ProvisionError, provision

_PROVISIONED = pytest.StashKey[Provisioned]()
#: how a skipped test's reason starts when the machine lacks what it needs (counted for the closing line)
LACKS = "this machine lacks "


def running_under_ci() -> bool:
    """True when the CI variable is set to anything but an explicit no."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--no-install", action="store_true",
                     help="install nothing even as root: skip what needs a missing browser or PostgreSQL")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Provide the browser and PostgreSQL before any test runs (and, under xdist, before the workers start)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")

    def say(line: str) -> None:
        if reporter is not None:
            reporter.write_line(f"provision: {line}")

    try:
        result = provision(os.environ, install=not session.config.getoption("no_install"), say=say)
    except ProvisionError as error:
        pytest.exit(f"could not provide what the tests need: {error}", returncode=pytest.ExitCode.USAGE_ERROR)
    os.environ.update(result.env)  # xdist's workers, started after this, inherit them
    session.config.stash[_PROVISIONED] = result


def require(config: pytest.Config, need: str) -> None:
    """Skip (fail under CI) a test that needs what this machine lacks: "browser" or "postgres"."""
    advice = config.stash[_PROVISIONED].missing.get(need)
    if advice is None:
        return
    if running_under_ci():
        pytest.fail(f"CI is set but {LACKS}{advice}", pytrace=False)
    pytest.skip(f"{LACKS}{advice}")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Apply `require` to every test marked `postgres` and every test that asks for the browser."""
    if item.get_closest_marker("postgres") is not None:
        require(item.config, "postgres")
    if "browser" in getattr(item, "fixturenames", ()):
        require(item.config, "browser")


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """One line saying what to install, instead of a line per test it kept from running."""
    skipped = [report for report in terminalreporter.stats.get("skipped", [])
               if isinstance(report.longrepr, tuple) and LACKS in str(report.longrepr[2])]
    result = config.stash.get(_PROVISIONED, None)
    if skipped and result is not None:
        terminalreporter.write_line(f"{len(skipped)} skipped, as {LACKS}{result.summary()}", yellow=True, bold=True)


def require_postgres_url() -> str:
    """The PostgreSQL test URL (set by then: `require` has skipped the tests that would need it otherwise)."""
    return os.environ[POSTGRES_URL_ENV]


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


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    """Headless Chromium through Playwright (tests/harness/browser.py), one per worker (each test makes its own
    contexts); fails the test when there is none."""
    async with async_playwright() as playwright:
        executable = chromium_or_fail(playwright.chromium.executable_path)
        # Chromium refuses to run as root with its sandbox (CI machines, containers)
        args = ["--no-sandbox"] if os.geteuid() == 0 else []
        browser = await playwright.chromium.launch(executable_path=executable, args=args)
        try:
            yield browser
        finally:
            await browser.close()
