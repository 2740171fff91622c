"""The webhook inbox's leases: an update handled for longer than its lease stays with its replica."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine
from telegram import Update
from telegram.ext import Application, ApplicationBuilder, TypeHandler

from bot.store import session_factory
from bot.tg.context import CONTEXT_TYPES
from bot.tg.inbox import UpdateInbox
from tests.fakes.telegram import FakeTelegram
from tests.integration.conftest import ptb_bot

#: short, so a handler outlives several leases within a test
LEASE = timedelta(seconds=0.6)
HANDLER_S = 2.0


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        yield fake


async def slow_application(fake: FakeTelegram, handled: list[int]) -> Application:
    """An application whose one handler takes several leases' time, noting each update it starts."""
    async def slow(update: Update, context) -> None:
        handled.append(update.update_id)
        await asyncio.sleep(HANDLER_S)

    application = ApplicationBuilder().bot(ptb_bot(fake)).updater(None).context_types(CONTEXT_TYPES).build()
    application.add_handler(TypeHandler(Update, slow))
    await application.initialize()
    return application


async def test_an_update_handled_past_its_lease_is_not_taken_by_another_replica(fake: FakeTelegram,
                                                                               store_engine: AsyncEngine):
    sessions = session_factory(store_engine)
    handled: list[int] = []
    applications = [await slow_application(fake, handled) for _ in range(2)]
    inboxes = [UpdateInbox(application, sessions, lambda update_id: asyncio.sleep(0, False), owner=f"replica-{n}",
                           lease=LEASE, grace=5.0, idle=0.05) for n, application in enumerate(applications)]
    stop = asyncio.Event()
    runs = [asyncio.create_task(inbox.run(stop)) for inbox in inboxes]
    try:
        await inboxes[0].accept({"update_id": 1, "message": {
            "message_id": 1, "date": 0, "chat": {"id": 7, "type": "private"}, "from": {"id": 7, "is_bot": False,
                                                                                      "first_name": "A"},
            "text": "slow"}})
        await asyncio.sleep(HANDLER_S + 3 * LEASE.total_seconds())
    finally:
        stop.set()
        await asyncio.gather(*runs)
        for application in applications:
            await application.shutdown()
    assert handled == [1]  # once, by whichever replica claimed it: the other saw its lease renewed
