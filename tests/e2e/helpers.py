"""Small helpers for end-to-end tests: what the bot has sent, waited for."""

from __future__ import annotations

from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import SentMessage


def media(telegram: FakeTelegram, chat_id: int) -> list[SentMessage]:
    """Photos, documents and album items the bot sent into a chat."""
    return [m for m in telegram.sent(chat_id) if m.media is not None and not m.deleted]


def texts(telegram: FakeTelegram, chat_id: int) -> list[str]:
    """The current text of every (not deleted) text message the bot sent into a chat."""
    return [m.text for m in telegram.sent(chat_id) if m.text is not None and not m.deleted]


async def wait_media(telegram: FakeTelegram, chat_id: int, count: int = 1, timeout: float = 20) -> list[SentMessage]:
    await telegram.wait_for(lambda: len(media(telegram, chat_id)) >= count, timeout)
    return media(telegram, chat_id)


async def wait_text(telegram: FakeTelegram, chat_id: int, fragment: str, timeout: float = 20) -> str:
    await telegram.wait_for(lambda: any(fragment in t for t in texts(telegram, chat_id)), timeout)
    return next(t for t in texts(telegram, chat_id) if fragment in t)


def acknowledged(telegram: FakeTelegram, chat_id: int, message_id: int) -> bool:
    """Whether the bot acknowledged a request: a reaction on the user's message, or a "queued" status message."""
    stored = telegram._state.message(chat_id, message_id)
    return bool(stored is not None and stored.reactions) or any("queued" in t for t in texts(telegram, chat_id))


async def wait_acknowledged(telegram: FakeTelegram, chat_id: int, message_id: int, timeout: float = 20) -> None:
    await telegram.wait_for(lambda: acknowledged(telegram, chat_id, message_id), timeout)
