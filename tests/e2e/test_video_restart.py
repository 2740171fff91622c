"""A video job survives a SIGKILL of a real `python -m bot` while the service renders it: delivered once."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path

import pytest

from bot.credits import CreditPolicy, CreditService, Pack
from bot.store import create_engine, session_factory
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import media
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.harness import BotProcess, bot_settings, sqlite_url

pytestmark = pytest.mark.timeout(150)


@pytest.fixture
def task_seconds() -> float:
    """Long enough for the test to kill the bot while the service still works on the video."""
    return 4.0


def video_jobs(database: Path, state: str | None = None) -> int:
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT count(*) FROM jobs WHERE operation = 'video'"
                                  " AND state = coalesce(?, state)", (state,)).fetchone()[0]


@pytest.fixture
async def bot_process(tmp_path: Path, telegram: FakeTelegram, sandbox) -> AsyncIterator[BotProcess]:
    catalogue = json.loads(resources.files("bot.operations").joinpath("styles.json").read_text(encoding="utf-8"))
    for model in catalogue["video"]["styles"].values():
        model["typical_seconds"] = 2  # the sandbox's tasks take seconds, not minutes
    styles = tmp_path / "styles.json"
    styles.write_text(json.dumps(catalogue), encoding="utf-8")
    process = BotProcess(bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), log_level="INFO",
                                      styles_file=styles), tmp_path, telegram)
    yield process
    await process.close()


async def test_a_sigkill_while_the_video_renders_still_delivers_it_once(
        bot_process: BotProcess, telegram: FakeTelegram, tmp_path: Path):
    database = tmp_path / "bot.db"
    chat = private_chat(ALICE)
    await bot_process.start()
    engine = create_engine(sqlite_url(database))
    try:
        await CreditService(session_factory(engine), CreditPolicy({})).purchase(ALICE.id, Pack(100, 50), "stxKill")
    finally:
        await engine.dispose()
    telegram.user_sends(chat, ALICE, text="/video seedance a paper boat on a rainy street")
    await telegram.wait_for(lambda: video_jobs(database, "running") == 1, timeout=30)
    await bot_process.kill()
    assert media(telegram, chat.id) == []
    await bot_process.start()
    await telegram.wait_for(lambda: video_jobs(database, "delivered") == 1, timeout=60)
    [video] = media(telegram, chat.id)
    assert video.media_kind == "video"
    assert sum(call.method == "sendVideo" and call.status in (None, 200) for call in telegram.calls) == 1
    assert video_jobs(database) == 1
