"""Replicas share the service alarm: the admins hear about a problem once, and again after it recovered."""

from __future__ import annotations

import asyncio

from sqlalchemy.ext.asyncio import AsyncEngine

from bot.aiart.errors import NoCredits
from bot.chats.conversations import Conversations
from bot.jobs.alarm import NO_CREDITS, ServiceAlarm
from bot.store import create_engine, session_factory

EMPTY = NoCredits("no credits left", status_code=200, code="510")


async def test_three_replicas_tell_the_admins_once_and_again_after_a_recovery(migrated_url: str):
    engines: list[AsyncEngine] = [create_engine(migrated_url) for _ in range(3)]
    told: list[str] = []

    async def send(problem: str) -> None:
        told.append(problem)

    replicas = [ServiceAlarm(send, shared=Conversations(session_factory(engine))) for engine in engines]
    try:
        for replica in replicas:  # every replica's jobs meet the empty account
            replica.observe(EMPTY)
            replica.observe(EMPTY)
        await asyncio.gather(*(replica.close() for replica in replicas))
        assert told == [NO_CREDITS]

        for replica in replicas:  # the account works again: the next breakage is news
            replica.observe(None)
        await asyncio.gather(*(replica.close() for replica in replicas))
        for replica in replicas:
            replica.observe(EMPTY)
        await asyncio.gather(*(replica.close() for replica in replicas))
        assert told == [NO_CREDITS, NO_CREDITS]
    finally:
        for engine in engines:
            await engine.dispose()
