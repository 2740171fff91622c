"""End-to-end fixtures: the real bot, run in-process against the fake Bot API and the sandbox on loopback."""

from __future__ import annotations

import asyncio
import io
from collections.abc import AsyncIterator

import pytest
from PIL import Image

from bot.config import Settings
from bot.runtime import run_bot
from bot.sandbox import Sandbox, SandboxConfig
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import Chat, User, group, private_chat

SERVICE_KEY = "e2e-service-key-0123456789abcdef"
ALICE = User(1001, "Alice", username="alice")
BOB = User(1002, "Bob", username="bob")


class RunningBot:
    """The bot's `run_bot` in a task of the test's event loop, stoppable and restartable."""

    def __init__(self, settings: Settings, telegram: FakeTelegram) -> None:
        self.settings = settings
        self.telegram = telegram
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        polls_before = self._get_updates_calls()
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(run_bot(self.settings, self._stop))
        await self.telegram.wait_for(lambda: self._get_updates_calls() > polls_before or self._task.done(), 20)
        if self._task.done():
            self._task.result()  # surface a start-up error

    async def stop(self) -> None:
        if self._task is None:
            return
        self._stop.set()
        await asyncio.wait_for(self._task, 30)
        self._task = None

    def _get_updates_calls(self) -> int:
        return sum(1 for call in self.telegram.calls if call.method == "getUpdates")


@pytest.fixture
def task_seconds() -> float:
    """How long sandbox tasks run; a test overrides this fixture to change it."""
    return 0.2


@pytest.fixture
async def sandbox(task_seconds: float) -> AsyncIterator[Sandbox]:
    service = Sandbox(SandboxConfig(api_key=SERVICE_KEY, task_seconds=task_seconds))
    await service.start()
    yield service
    await service.stop()


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    fake = FakeTelegram()
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def settings(tmp_path, telegram: FakeTelegram, sandbox: Sandbox) -> Settings:
    return Settings(_env_file=None, telegram_bot_token=telegram.token, telegram_api_url=telegram.url,
                    aiart_api_key=SERVICE_KEY, aiart_base_url=sandbox.base_url, aiart_static_url=sandbox.static_url,
                    database_url=f"sqlite+aiosqlite:///{tmp_path}/bot.db", worker_id="e2e-worker",
                    bot_admins="1001", log_level="DEBUG")


@pytest.fixture
async def bot(settings: Settings, telegram: FakeTelegram) -> AsyncIterator[RunningBot]:
    running = RunningBot(settings, telegram)
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
