"""End-to-end fixtures: the real bot, run in-process against the fake Bot API and the sandbox on loopback.

The fixtures are thin: starting things is tests/harness's job, shared with the chaos run and the benchmark.

Each test gets its own fake Bot API, sandbox, bot and database (a copy of a template migrated once per
worker), so tests share nothing and run in any order on any xdist worker. A test in a new module asks for
`bot`, `telegram`, `sandbox`, `settings` as before; it waits for what the bot does (helpers.wait_media,
wait_text, settled for a row written just after a message), never for a fixed time. Its bot polls the
service at POLL_TIME_SCALE and paces chats fast (`chat_pace`); a test about flood limits is marked
`telegram_limits`, and one that measures time on the real clock `xdist_group("timing")`.
"""

from __future__ import annotations

import functools
import io
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from PIL import Image

from bot.config import Settings
from bot.sandbox import Sandbox
from bot.tg import app as tg_app
from bot.tg.ratelimit import Limit, TelegramRateLimiter
from tests.conftest import migrated_sqlite
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import Chat, User, group, private_chat
from tests.harness import SERVICE_KEY, InProcessBot, bot_settings, sandbox_config, settings_of

__all__ = ["ALICE", "BOB", "SERVICE_KEY", "RunningBot", "mode_and_format", "size_of"]

ALICE = User(1001, "Alice", username="alice")
BOB = User(1002, "Bob", username="bob")
#: the name the e2e tests know the in-process bot by
RunningBot = InProcessBot
#: the bot's poll delays, scaled: sandbox tasks take tenths of a second, not the service's seconds, so a result
#: is seen about as soon after its task ends as with the real service (the schedule itself: tests/unit/test_polling.py)
POLL_TIME_SCALE = 0.1


@pytest.fixture(autouse=True)
def chat_pace(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bots started in this process pace each chat 30 times faster than Telegram asks (a private chat: a burst
    of 30, then 30 a second; a group: 20 a second), as the fake Bot API enforces no limit unless told to.
    A test about flood limits or their pace is marked `telegram_limits` and gets Telegram's own."""
    if request.node.get_closest_marker("telegram_limits") is None:
        monkeypatch.setattr(tg_app, "TelegramRateLimiter", functools.partial(
            TelegramRateLimiter, private_burst=30, private_rate=30.0, group=Limit(20, 1.0)))


@pytest.fixture
def task_seconds() -> float:
    """How long sandbox tasks run; a test overrides this fixture to change it."""
    return 0.2


@pytest.fixture
async def sandbox(task_seconds: float) -> AsyncIterator[Sandbox]:
    async with Sandbox(sandbox_config(task_seconds=task_seconds)) as service:
        yield service


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


@pytest.fixture
def settings(tmp_path, telegram: FakeTelegram, sandbox: Sandbox, sqlite_template: Path) -> Settings:
    """The bot's settings: its database a copy of the migrated template (the bot finds it at head and starts)."""
    database = migrated_sqlite(sqlite_template, tmp_path / "bot.db")
    return settings_of(bot_settings(telegram, sandbox, database, worker_id="e2e-worker", bot_admins="1001",
                                    log_level="DEBUG", poll_time_scale=POLL_TIME_SCALE))


@pytest.fixture
async def bot(settings: Settings, telegram: FakeTelegram) -> AsyncIterator[InProcessBot]:
    running = InProcessBot(settings, telegram)
    await running.start()
    yield running
    await running.stop()


@pytest.fixture
def alice_chat() -> Chat:
    return private_chat(ALICE)


@pytest.fixture
def group_chat() -> Chat:
    return group(-100500, "Photo club")


def size_of(data: bytes) -> tuple[int, int]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size


def mode_and_format(data: bytes) -> tuple[str, str]:
    with Image.open(io.BytesIO(data)) as image:
        return image.mode, image.format
