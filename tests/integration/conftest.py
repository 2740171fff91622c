"""Fixtures shared by the integration tests: python-telegram-bot's real Bot pointed at a module's `fake`, and a
quick embedded sandbox."""

from collections.abc import AsyncIterator

import pytest
import telegram

from bot.sandbox import Sandbox, SandboxConfig
from tests.fakes.telegram import FakeTelegram


def ptb_bot(fake: FakeTelegram, token: str | None = None) -> telegram.Bot:
    """A python-telegram-bot Bot that talks to the fake (with another token when given)."""
    return telegram.Bot(token or fake.token, base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")


@pytest.fixture
async def bot(fake: FakeTelegram) -> AsyncIterator[telegram.Bot]:
    """The real Bot against the `fake` fixture of the module that asks for it."""
    async with ptb_bot(fake) as bot:
        yield bot


#: the key of the `sandbox` fixture's sandbox
SANDBOX_KEY = "integration-sandbox-key"


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    """An embedded sandbox on loopback whose tasks take 0.05 s, for tests that call its endpoints."""
    async with Sandbox(SandboxConfig(api_key=SANDBOX_KEY, task_seconds=0.05)) as sandbox:
        yield sandbox
