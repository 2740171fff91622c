"""A guest-mode job survives a SIGKILL of a real `python -m bot` between the answer and the result: the restarted
process edits the answer into the picture (its inline message id is in the job's row), on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.store import create_engine
from tests.conftest import _empty_postgres_database
from tests.e2e.conftest import ALICE, BOB, size_of
from tests.e2e.test_guest import BOT, CLUB, placeholder
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.harness import BotProcess, bot_settings, sqlite_url

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def task_seconds() -> float:
    """Long enough for the test to kill the bot while the service still works on the picture."""
    return 4.0


async def guest_jobs(url: str, state: str | None = None) -> int:
    """Jobs with an inline message (guest mode's), in `state` when given."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            return (await connection.execute(text(
                "SELECT count(*) FROM jobs WHERE inline_message_id IS NOT NULL AND state = coalesce(:state, state)"),
                {"state": state})).scalar_one()
    finally:
        await engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "bot.db")
    url: str = request.getfixturevalue("postgres_database")
    await _empty_postgres_database(url)
    return url


@pytest.fixture
async def bot_process(tmp_path: Path, telegram: FakeTelegram, sandbox, database: str) -> AsyncIterator[BotProcess]:
    telegram.guest.enabled = True
    process = BotProcess(bot_settings(telegram, sandbox, database, log_level="INFO"), tmp_path, telegram)
    yield process
    await process.close()


async def test_a_sigkill_between_the_answer_and_the_result_still_edits_the_answer(
        bot_process: BotProcess, telegram: FakeTelegram, database: str):
    telegram.guest.outside(CLUB)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    await bot_process.start()
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} upscale 2", reply_to=photo)
    message = await placeholder(telegram, query)
    for _ in range(300):  # the task is at the service (it runs 4 s)
        if await guest_jobs(database, "running") == 1:
            break
        await asyncio.sleep(0.1)
    assert await guest_jobs(database, "running") == 1
    await bot_process.kill()
    assert message.photo is None
    await bot_process.start()
    await telegram.wait_for(lambda: message.photo is not None, timeout=60)
    assert size_of(message.photo) == (640, 480)
    assert await guest_jobs(database) == 1
    assert len(telegram.guest.queries) == 1 and telegram.guest.queries[query].answer is not None
