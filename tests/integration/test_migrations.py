"""Alembic migrations: the stairway on both backends, and the schema they build matches the models."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import JSON, Connection, bindparam, inspect, text

from bot.store import create_engine, migrate
from bot.store.db import alembic_config
from bot.store.models import Base, UTCDateTime

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPECTED_JOB_INDEXES = {
    "ix_jobs_state_next_check_at": ["state", "next_check_at"],
    "ix_jobs_chat_id_state": ["chat_id", "state"],
    "ix_jobs_user_id_created_at": ["user_id", "created_at"],
    "ix_jobs_task_id": ["task_id"],
}


def cli_config(url: str) -> Any:
    """An Alembic config that makes env.py open its own async engine, as the `alembic` command does."""
    config = alembic_config()
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


async def alembic(action: str, url: str, revision: str) -> None:
    """Run an Alembic command through env.py's async path (in a thread: env.py starts its own loop)."""
    await asyncio.to_thread(getattr(command, action), cli_config(url), revision)


async def inspect_db(url: str, look: Any) -> Any:
    """Run a synchronous inspection function on a fresh connection."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return await connection.run_sync(look)
    finally:
        await engine.dispose()


def schema(connection: Connection) -> dict[str, Any]:
    """Tables, job indexes and the stamped revision."""
    inspector = inspect(connection)
    tables = set(inspector.get_table_names())
    indexes = (
        {index["name"]: index["column_names"] for index in inspector.get_indexes("jobs")}
        if "jobs" in tables
        else {}
    )
    revision = MigrationContext.configure(connection).get_current_revision()
    return {"tables": tables - {"alembic_version"}, "job_indexes": indexes, "revision": revision}


def head_revision() -> str:
    """The newest revision id."""
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def test_stairway_upgrades_and_downgrades_every_revision(db_url: str) -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert Path(script.dir) == REPO_ROOT / "migrations"  # the top-level folder, not a copy in a package
    revisions = list(reversed(list(script.walk_revisions())))
    assert revisions, "no migrations found"
    for revision in revisions:
        await alembic("upgrade", db_url, revision.revision)
        await alembic("downgrade", db_url, revision.down_revision or "base")  # type: ignore[arg-type]
        await alembic("upgrade", db_url, revision.revision)

    await alembic("downgrade", db_url, "base")
    emptied = await inspect_db(db_url, schema)
    await alembic("upgrade", db_url, "head")
    rebuilt = await inspect_db(db_url, schema)

    assert emptied == {"tables": set(), "job_indexes": {}, "revision": None}
    assert rebuilt["tables"] == set(Base.metadata.tables)
    assert rebuilt["job_indexes"] == EXPECTED_JOB_INDEXES
    assert rebuilt["revision"] == head_revision()


async def test_migrated_schema_matches_the_models(db_url: str) -> None:
    await migrate(db_url)

    differences = await inspect_db(
        db_url,
        lambda connection: compare_metadata(
            MigrationContext.configure(connection, opts={"compare_type": True}), Base.metadata
        ),
    )

    assert differences == []


async def test_migrate_runs_inside_the_event_loop_and_is_repeatable(db_url: str) -> None:
    await migrate(db_url)
    await migrate(db_url)

    migrated = await inspect_db(db_url, schema)

    assert migrated["revision"] == head_revision()
    assert migrated["tables"] == set(Base.metadata.tables)


async def test_migrate_takes_a_database_one_revision_behind_to_the_head(db_url: str) -> None:
    # a database at head costs one query at start-up; one behind must still be upgraded
    script = ScriptDirectory.from_config(alembic_config())
    previous = script.get_revision(head_revision()).down_revision
    await alembic("upgrade", db_url, previous)  # type: ignore[arg-type]

    await migrate(db_url)

    migrated = await inspect_db(db_url, schema)
    assert migrated["revision"] == head_revision()
    assert migrated["tables"] == set(Base.metadata.tables)


async def test_concurrent_migrations_take_turns(db_url: str) -> None:
    await asyncio.gather(*(migrate(db_url) for _ in range(3)))

    migrated = await inspect_db(db_url, schema)

    assert migrated["revision"] == head_revision()
    assert migrated["job_indexes"] == EXPECTED_JOB_INDEXES


def test_alembic_command_line_uses_the_url_given(tmp_path: Path) -> None:
    database = tmp_path / "cli" / "bot.db"
    environment = {**os.environ, "DATABASE_URL": "sqlite+aiosqlite:///" + str(tmp_path / "wrong.db")}

    subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url=sqlite+aiosqlite:///{database}", "upgrade", "head"],
        cwd=REPO_ROOT,
        env=environment,
        check=True,
        capture_output=True,
        timeout=60,
    )

    migrated = asyncio.run(inspect_db(f"sqlite+aiosqlite:///{database}", schema))
    assert migrated["revision"] == head_revision()
    assert migrated["job_indexes"] == EXPECTED_JOB_INDEXES
    assert not (tmp_path / "wrong.db").exists()


def test_alembic_command_line_falls_back_to_database_url(tmp_path: Path) -> None:
    database = tmp_path / "from-env" / "bot.db"
    environment = {**os.environ, "DATABASE_URL": f"sqlite+aiosqlite:///{database}"}

    subprocess.run(
        [sys.executable, "-m", "alembic", "upgrade", "head"],
        cwd=REPO_ROOT,
        env=environment,
        check=True,
        capture_output=True,
        timeout=60,
    )

    migrated = asyncio.run(inspect_db(f"sqlite+aiosqlite:///{database}", schema))
    assert migrated["revision"] == head_revision()


#: (state, `error` as 0002 wrote it) -> (refused, failure_kind, error) after 0003
ERRORS_MOVED = [
    ("failed", "refused: The factor must be 2 or 4.", (True, "bad_input", "The factor must be 2 or 4.")),
    ("running", "notice pending: rejected|upscaling_resize out of range",
     (False, "rejected", "upscaling_resize out of range")),
    ("queued", "notice pending: expired|", (False, "expired", None)),
    ("failed", "service_failed: the model gave up: twice", (False, "service_failed", "the model gave up: twice")),
    ("expired", "expired", (False, "expired", None)),
    ("failed", "bad_input: it failed every time I tried", (False, "bad_input", "it failed every time I tried")),
    ("delivered", None, (False, None, None)),
]
UNKNOWN_NOTICE = ("submitting", "notice pending: from_the_future|?")


async def jobs_at(url: str, columns: str) -> list[tuple[Any, ...]]:
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return [tuple(row) for row in await connection.execute(text(f"SELECT {columns} FROM jobs ORDER BY id"))]
    finally:
        await engine.dispose()


async def add_old_jobs(url: str, rows: list[tuple[str, str | None]]) -> None:
    """Jobs as revision 0002 stored them, state encoded in `error`."""
    insert = text(
        "INSERT INTO jobs (chat_id, chat_type, operation, args, inputs, state, attempts, next_check_at, deadline_at,"
        " result_urls, error, sent_message_ids, created_at, updated_at)"
        " VALUES (1, 'private', 'upscale', :empty, :none, :state, 1, :at, :at, :none, :error, :none, :at, :at)"
    ).bindparams(bindparam("at", type_=UTCDateTime()), bindparam("empty", type_=JSON()),
                 bindparam("none", type_=JSON()))
    at = datetime(2030, 1, 1, tzinfo=UTC)
    engine = create_engine(url)
    try:
        async with engine.begin() as connection:
            for state, error in rows:
                await connection.execute(insert, {"state": state, "error": error, "at": at, "empty": {}, "none": []})
    finally:
        await engine.dispose()


async def test_0003_moves_the_state_out_of_error_and_the_downgrade_puts_it_back(db_url: str) -> None:
    await alembic("upgrade", db_url, "0002")
    old = [(state, error) for state, error, _ in ERRORS_MOVED] + [UNKNOWN_NOTICE]
    await add_old_jobs(db_url, old)

    await alembic("upgrade", db_url, "0003")
    moved = await jobs_at(db_url, "refused, failure_kind, error")
    await alembic("downgrade", db_url, "0002")
    restored = await jobs_at(db_url, "state, error")

    assert [(bool(refused), kind, error) for refused, kind, error in moved] == (
        [expected for _, _, expected in ERRORS_MOVED] + [(False, "unavailable", None)])
    # the old bot told a notice of a kind it did not know as "unavailable"; that is what comes back
    assert restored == [*old[:-1], ("submitting", "notice pending: unavailable|")]
