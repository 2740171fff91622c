"""Alembic migrations: the stairway on both backends, and the schema they build matches the models."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect

from bot.store import create_engine, migrate
from bot.store.db import alembic_config
from bot.store.models import Base

REPO_ROOT = Path(__file__).resolve().parents[2]
EXPECTED_JOB_INDEXES = {
    "ix_jobs_state_next_check_at": ["state", "next_check_at"],
    "ix_jobs_chat_id_state": ["chat_id", "state"],
    "ix_jobs_user_id_created_at": ["user_id", "created_at"],
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
    assert rebuilt["tables"] == {"jobs", "chats", "users"}
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
    assert migrated["tables"] == {"jobs", "chats", "users"}


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
