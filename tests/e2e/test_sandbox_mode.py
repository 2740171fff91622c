"""Without AIART_API_KEY the bot serves the embedded sandbox, and says so: a start-up warning and a caption mark."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from bot.config import Settings
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, RunningBot
from tests.e2e.helpers import wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram


@pytest.fixture
def sandbox_settings(tmp_path, telegram: FakeTelegram) -> Settings:
    """The bot as an operator starts it with no service key: it runs the embedded sandbox itself."""
    return Settings(_env_file=None, telegram_bot_token=telegram.token, telegram_api_url=telegram.url,
                    aiart_api_key=None, sandbox_task_seconds=0.2,
                    database_url=f"sqlite+aiosqlite:///{tmp_path}/bot.db", worker_id="e2e-sandbox-worker",
                    http_host="127.0.0.1", http_port=0)


@pytest.fixture
async def sandbox_bot(sandbox_settings: Settings, telegram: FakeTelegram,
                      caplog: pytest.LogCaptureFixture) -> AsyncIterator[RunningBot]:
    caplog.set_level(logging.INFO, logger="bot.runtime")
    running = RunningBot(sandbox_settings, telegram)
    await running.start()
    yield running
    await running.stop()


async def test_sandbox_mode_warns_at_start_and_marks_every_result(sandbox_bot, telegram, alice_chat, caplog):
    started = caplog.get_records("setup")  # the bot started in the fixture
    [warning] = [r for r in started if r.name == "bot.runtime" and r.levelno == logging.WARNING]
    assert "SANDBOX MODE" in warning.getMessage() and "AIART_API_KEY" in warning.getMessage()

    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(200, 200), caption="/headshot business 2")
    results = await wait_media(telegram, alice_chat.id, 3)

    captioned = [result for result in results if result.caption]
    assert len(captioned) == 2  # the single photo, and the album's first item
    assert all(result.caption.endswith("\n" + bot_texts.SANDBOX_MARK) for result in captioned)


@pytest.fixture
def caplog_from_start(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="bot.runtime")
    return caplog


async def test_with_a_service_key_results_carry_no_sandbox_mark(caplog_from_start, bot, telegram, alice_chat):
    caplog = caplog_from_start
    assert any("is running" in record.getMessage() for record in caplog.get_records("setup"))
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
    [result] = await wait_media(telegram, alice_chat.id)

    assert result.caption == "✅ Upscale ×2 · 1 credit"  # every result says what it cost
    assert "sandbox" not in result.caption.lower()
    assert not any("SANDBOX MODE" in record.getMessage() for record in caplog.get_records("setup"))
