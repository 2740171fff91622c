"""Alembic environment: async engine, batch mode for SQLite, or a connection handed in by `migrate()`."""

from __future__ import annotations

import asyncio
from logging.config import fileConfig

from alembic import context
from sqlalchemy import Connection

from bot.store.db import async_url, create_engine
from bot.store.models import Base

config = context.config
target_metadata = Base.metadata

# Called from the `alembic` command line only: programmatic callers keep their own logging setup.
if config.config_file_name is not None and config.attributes.get("configure_logger", True):
    fileConfig(config.config_file_name, disable_existing_loggers=False)


def database_url() -> str:
    """The URL to migrate: `-x url=...`, then `sqlalchemy.url`, then the bot's DATABASE_URL."""
    url = context.get_x_argument(as_dictionary=True).get("url") or config.get_main_option("sqlalchemy.url")
    if url:
        return url
    from bot.config import Settings  # only here: reading settings is the CLI's fallback

    return Settings().database_url


def configure(connection: Connection) -> None:
    """Point Alembic at a live connection; SQLite alters tables through batch (copy-and-move) mode."""
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )


def run_on_connection(connection: Connection) -> None:
    """Run the migrations on an open synchronous connection."""
    configure(connection)
    with context.begin_transaction():
        context.run_migrations()


async def run_async() -> None:
    """Open the store's own async engine (same SQLite pragmas as the bot) and migrate."""
    engine = create_engine(database_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_on_connection)
    finally:
        await engine.dispose()


def run_offline() -> None:
    """Emit SQL to stdout instead of running it (`alembic upgrade head --sql`)."""
    context.configure(
        url=async_url(database_url()),
        target_metadata=target_metadata,
        literal_binds=True,
        dialect_opts={"paramstyle": "named"},
        render_as_batch=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
elif (shared := config.attributes.get("connection")) is not None:
    run_on_connection(shared)
else:
    asyncio.run(run_async())
