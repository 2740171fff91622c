"""The database password is a secret: never in the settings' repr, and blanked in every log line."""

from __future__ import annotations

import io
import logging

from bot.__main__ import _secrets
from bot.config import Settings
from bot.logs import redacting_handler

PASSWORD = "s3cret-db-p@ss"
URL = "postgresql+asyncpg://bot:s3cret-db-p%40ss@db.internal:5432/bot"


def settings(url: str = URL) -> Settings:
    return Settings(_env_file=None, database_url=url)


def test_the_password_is_read_from_the_url_decoded():
    assert settings().database_password == PASSWORD
    assert settings("postgresql://bot@db/bot?password=query-secret").database_password == "query-secret"
    assert settings("sqlite+aiosqlite:///./data/bot.db").database_password is None
    assert settings("postgresql://bot@db/bot").database_password is None


def test_the_settings_never_print_the_database_url():
    shown = repr(settings()) + str(settings())
    assert PASSWORD not in shown and "s3cret-db-p%40ss" not in shown and "db.internal" not in shown


def test_the_password_is_one_of_the_secrets_the_logs_blank():
    assert PASSWORD in _secrets(settings())
    assert _secrets(settings("sqlite+aiosqlite:///./data/bot.db")) == []


def log_through(secrets: list[str], message: str, *args: object, exc: BaseException | None = None) -> str:
    stream = io.StringIO()
    logger = logging.getLogger("test.database_secret")
    logger.propagate = False
    logger.handlers[:] = [redacting_handler(secrets, stream)]
    try:
        logger.error(message, *args, exc_info=(type(exc), exc, None) if exc else None)
    finally:
        logger.handlers.clear()
    return stream.getvalue()


def test_the_password_is_blanked_as_written_and_percent_encoded():
    line = log_through(_secrets(settings()), "cannot connect to %s (password %s)", URL, PASSWORD,
                       exc=ConnectionError(f"auth failed for {URL}"))
    assert PASSWORD not in line and "s3cret-db-p%40ss" not in line
    assert "postgresql+asyncpg://bot:***@db.internal:5432/bot" in line


def test_a_short_password_in_any_url_is_blanked_too():
    # "bot" is too short to blank everywhere (it would eat "bot.jobs"), but inside a URL it is a password
    line = log_through([], "engine for postgresql+asyncpg://bot:bot@127.0.0.1:5432/bot_test in bot.jobs")
    assert "bot:bot@" not in line and "postgresql+asyncpg://bot:***@127.0.0.1:5432/bot_test in bot.jobs" in line
