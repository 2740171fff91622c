"""Small helpers for end-to-end tests: what the bot has sent, waited for, and the jobs it stored."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import select

from bot.config import Settings
from bot.credits import CreditPolicy, CreditService, Pack
from bot.sandbox import Sandbox
from bot.store import create_engine, session_factory
from bot.store.models import Job
from tests.conftest import _empty_postgres_database
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import SentMessage
from tests.harness import bot_settings, settings_of, sqlite_url

T = TypeVar("T")


#: the two ways a feature is tested end to end: long polling on an SQLite file, webhook mode on PostgreSQL
BOTH_MODES = ["polling", pytest.param("webhook", marks=pytest.mark.postgres)]


async def mode_settings(request: pytest.FixtureRequest, tmp_path: Path, telegram: FakeTelegram, sandbox: Sandbox,
                           **values: Any) -> Settings:
    """The bot of a BOTH_MODES parameter (its database empty), with `values` and updates leased for 2 s."""
    webhook = request.param == "webhook"
    if webhook:
        url = request.getfixturevalue("postgres_database")
        await _empty_postgres_database(url)
    else:
        url = sqlite_url(tmp_path / "bot.db")
    return settings_of(bot_settings(telegram, sandbox, url, webhook=webhook, update_lease_s=2, **values))


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


async def wait_handled(telegram: FakeTelegram, timeout: float = 20) -> None:
    """Wait until the bot has handled every update sent so far: long polling confirms an update (the next
    getUpdates' offset) only once its handlers have run, so a reply it has not sent by then never comes."""
    await telegram.wait_for(lambda: telegram.pending_updates == 0, timeout)


def acknowledged(telegram: FakeTelegram, chat_id: int, message_id: int) -> bool:
    """Whether the bot acknowledged a request: a reaction on the user's message, or a "queued" status message."""
    stored = telegram._state.message(chat_id, message_id)
    return bool(stored is not None and stored.reactions) or any("queued" in t for t in texts(telegram, chat_id))


async def wait_acknowledged(telegram: FakeTelegram, chat_id: int, message_id: int, timeout: float = 20) -> None:
    await telegram.wait_for(lambda: acknowledged(telegram, chat_id, message_id), timeout)


async def job_states(settings) -> list[tuple[str, str]]:
    """(operation, state) of every job row, oldest first."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            rows = (await session.execute(select(Job.operation, Job.state).order_by(Job.id))).all()
        return [(operation, str(state)) for operation, state in rows]
    finally:
        await engine.dispose()


def generation_posts(sandbox) -> list[dict]:
    """The bodies of the image-generation requests the sandbox received."""
    return [json.loads(r.body) for r in sandbox.received
            if r.method == "POST" and r.path.startswith("/v1/aiart/imagegeneration/")]


async def settled(read: Callable[[], Awaitable[T]], expected: T, timeout: float = 10) -> T:
    """What `read` gives once it gives `expected`, or the last it gave after `timeout` s (a job's row becomes
    delivered just after its result is sent, so a test that saw the result may read the row a moment early)."""
    for _ in range(int(timeout / 0.05)):
        if (value := await read()) == expected:
            return value
        await asyncio.sleep(0.05)
    return await read()


async def fill_pool(database_url: str, chat_id: int, credits: int, *, cap: int | None = None,
                    funder: int = 1001) -> None:
    """A group admin (`funder`) bought credits and put them in the group's pool; each member capped at `cap` a day."""
    engine = create_engine(database_url)
    try:
        service = CreditService(session_factory(engine), CreditPolicy({}))
        await service.purchase(funder, Pack(credits, 50), f"stxFunding{chat_id}x{credits}")
        await service.move_to_pool(funder, chat_id, credits)
        await service.set_pool_cap(chat_id, cap)
    finally:
        await engine.dispose()
