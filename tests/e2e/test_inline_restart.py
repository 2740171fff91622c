"""An inline-mode job survives a SIGKILL of a real `python -m bot` between the choice and the result: the
restarted process edits the inline message into the picture (the message id is in the job's row)."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.conftest import ALICE, size_of
from tests.e2e.test_inline import choose_generate
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.harness import BotProcess, bot_settings, sqlite_url

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def task_seconds() -> float:
    """Long enough for the test to kill the bot while the service still works on the picture."""
    return 4.0


def inline_jobs(database: Path, state: str | None = None) -> int:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT count(*) FROM jobs WHERE inline_message_id IS NOT NULL"
                                  " AND state = coalesce(?, state)", (state,)).fetchone()[0]


@pytest.fixture
async def bot_process(tmp_path: Path, telegram: FakeTelegram, sandbox) -> AsyncIterator[BotProcess]:
    telegram.inline.enabled = True
    process = BotProcess(bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), log_level="INFO"),
                         tmp_path, telegram)
    yield process
    await process.close()


async def test_a_restart_between_the_choice_and_the_result_still_edits_the_inline_message(
        bot_process: BotProcess, telegram: FakeTelegram, tmp_path: Path):
    database = tmp_path / "bot.db"
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    await bot_process.start()
    message = await choose_generate(telegram, ALICE, "a lighthouse at dawn")
    await telegram.wait_for(lambda: inline_jobs(database, "running") == 1, timeout=30)
    await bot_process.kill()
    assert message.photo is None
    await bot_process.start()
    await telegram.wait_for(lambda: message.photo is not None, timeout=60)
    assert size_of(message.photo) == (1024, 1024)
    await telegram.wait_for(lambda: inline_jobs(database, "delivered") == 1, timeout=10)
    assert inline_jobs(database) == 1
