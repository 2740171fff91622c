"""Fixtures shared by the tests of the fake Bot API: python-telegram-bot's real Bot, pointed at a module's `fake`."""

from collections.abc import AsyncIterator

import pytest
import telegram

from tests.fakes.telegram import FakeTelegram


def ptb_bot(fake: FakeTelegram, token: str | None = None) -> telegram.Bot:
    """A python-telegram-bot Bot that talks to the fake (with another token when given)."""
    return telegram.Bot(token or fake.token, base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot")


@pytest.fixture
async def bot(fake: FakeTelegram) -> AsyncIterator[telegram.Bot]:
    """The real Bot against the `fake` fixture of the module that asks for it."""
    async with ptb_bot(fake) as bot:
        yield bot
