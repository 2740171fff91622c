"""Without AIART_API_KEY the bot serves the embedded sandbox, and says so: a start-up warning and a caption mark."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from collections.abc import AsyncIterator

import pytest

from bot.config import Settings
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, RunningBot
from tests.e2e.helpers import wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram
from tests.harness import ROOT, free_port, process_env, settings_of


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


# --- the compose demo: a key, and a stand-alone sandbox that says in its answers what it is -------------

COMPOSE = ROOT / "compose.yaml"


def _resolved(value: str) -> str:
    """A compose value with `${NAME:-default}` as compose resolves it when NAME is unset (the demo's case)."""
    value = value.strip().strip('"')
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def compose_bot_environment() -> dict[str, str]:
    """The bots' environment in compose.yaml (the `&bot-env` block), its defaults resolved."""
    block = COMPOSE.read_text().split("environment: &bot-env\n", 1)[1]
    values = {}
    for line in block.splitlines():
        found = re.fullmatch(r" {4}([A-Z_]+): (.+)", line)
        if found is None:
            break
        values[found[1]] = _resolved(found[2])
    return values


def compose_sandbox_command() -> list[str]:
    """The sandbox service's command in compose.yaml (a YAML flow list, which is JSON here)."""
    text = COMPOSE.read_text().split("  sandbox:\n", 1)[1].split("command: ", 1)[1]
    return [_resolved(word) for word in json.loads(text[:text.index("]") + 1])]


async def test_the_compose_demo_with_its_demo_key_is_marked_sandbox(tmp_path, telegram, alice_chat, caplog_from_start):
    caplog = caplog_from_start
    environment, command = compose_bot_environment(), compose_sandbox_command()
    assert environment["AIART_API_KEY"] == "demo-sandbox-key"  # a key is set: the bot does not embed a sandbox
    port = free_port()
    # the sandbox as compose runs it, on loopback instead of the compose network, its tasks quicker
    swaps = {"0.0.0.0": "127.0.0.1", "8090": str(port), "http://sandbox:8090": f"http://127.0.0.1:{port}",
             "3": "0.2"}
    arguments = [swaps.get(word, word) for word in command]
    assert arguments[:3] == ["python", "-m", "bot"]
    sandbox = await asyncio.create_subprocess_exec(sys.executable, *arguments[1:], cwd=tmp_path,
                                                   env=process_env({}), stdout=asyncio.subprocess.PIPE)
    try:
        assert sandbox.stdout is not None
        assert b"sandbox on" in await asyncio.wait_for(sandbox.stdout.readline(), 60)
        # compose's bot settings, with the other services' addresses as they are reached here
        values = {**environment, "TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_API_URL": telegram.url,
                  "DATABASE_URL": f"sqlite+aiosqlite:///{tmp_path}/bot.db", "HTTP_PORT": "0",
                  "AIART_BASE_URL": environment["AIART_BASE_URL"].replace("http://sandbox:8090",
                                                                          f"http://127.0.0.1:{port}")}
        running = RunningBot(settings_of(values), telegram)
        await running.start()
        try:
            telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
            [result] = await wait_media(telegram, alice_chat.id, timeout=30)
        finally:
            await running.stop()
    finally:
        sandbox.terminate()
        await sandbox.wait()
    assert result.caption.endswith("\n" + bot_texts.SANDBOX_MARK)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("SANDBOX MODE" in warning and "says it is a sandbox" in warning for warning in warnings)
    [summary] = [r.getMessage() for r in caplog.records if "is running" in r.getMessage()]
    assert "service: sandbox at" in summary
