"""A result link the bot does not fetch from ends the job as failed, and the user is told why."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from bot.config import Settings
from bot.store import create_engine
from bot.store.models import Job
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import job_states, media, settled, wait_text
from tests.fakes import samples


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # the sandbox serves results from 127.0.0.1, which is not on the list: every result is refused
    # (before any address is looked up: the host alone decides)
    return settings.model_copy(update={"aiart_result_hosts": frozenset({"cdn.example"}),
                                       "aiart_static_url": "http://static.example"})


async def test_a_refused_result_fails_the_job_with_a_clear_message(bot, telegram, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/upscale 2")
    text = await wait_text(telegram, alice_chat.id, "couldn't send it")
    assert "a host the bot does not fetch from" in text
    assert media(telegram, alice_chat.id) == []
    # the row says failed just after the user is told
    assert await settled(lambda: job_states(settings), [("upscale", "failed")]) == [("upscale", "failed")]
    engine = create_engine(settings.database_url)
    try:
        async with engine.connect() as connection:
            [error] = (await connection.execute(select(Job.error))).scalars().all()
    finally:
        await engine.dispose()
    assert "does not fetch from" in error
