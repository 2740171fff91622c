"""One chat flooding the bot, end to end with Telegram's flood limits on: everyone else is still answered
within seconds, and the flooder's chat ends in a sane state."""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import select

from bot.store import create_engine, session_factory
from bot.store.models import Job
from bot.tg import texts as bot_texts
from tests.e2e.conftest import BOB, RunningBot
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User, private_chat

# the bot paces the flood as Telegram asks, against the fake's own limits; answers are timed on the real clock
pytestmark = [pytest.mark.telegram_limits, pytest.mark.xdist_group("timing")]

FLOODER = User(1010, "Mallory", username="mallory")
CAROL = User(1003, "Carol", username="carol")
FLOOD = 300
#: how late another user's answer may come while the flood is handled
ANSWER_WITHIN_S = 3.0
FINAL_STATES = {"delivered", "failed", "cancelled", "expired"}


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    """The fake Bot API with Telegram's flood limits on (429 beyond them)."""
    async with FakeTelegram(rate_limits=True) as fake:
        yield fake


async def job_states(settings, user_id: int) -> list[str]:
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            rows = (await session.execute(select(Job.state).where(Job.user_id == user_id))).scalars().all()
        return [str(state) for state in rows]
    finally:
        await engine.dispose()


def answered(telegram: FakeTelegram, chat_id: int, message_id: int) -> bool:
    """A reply to the message, or a reaction on it (the acknowledgement of a quick job)."""
    stored = telegram._state.message(chat_id, message_id)
    if stored is not None and stored.reactions:
        return True
    return any(m.reply_to_message_id == message_id for m in telegram.sent(chat_id))


async def answer_delay(telegram: FakeTelegram, chat_id: int, message_id: int, sent_at: float,
                       timeout: float) -> float:
    await telegram.wait_for(lambda: answered(telegram, chat_id, message_id), timeout)
    return time.monotonic() - sent_at


def flood_message(telegram: FakeTelegram, index: int, photo: bytes) -> None:
    chat = private_chat(FLOODER)
    kind = index % 4
    if kind == 0:
        telegram.user_sends(chat, FLOODER, text=f"hello {index}")
    elif kind == 1:
        telegram.user_sends(chat, FLOODER, text="/help")
    elif kind == 2:
        telegram.user_sends(chat, FLOODER, photo=photo, caption="/upscale 2")
    else:
        telegram.user_sends(chat, FLOODER, photo=photo)  # a menu each


async def test_a_flood_of_300_messages_does_not_hold_up_other_users(settings, telegram):
    running = RunningBot(settings.model_copy(update={"poll_time_scale": 0.2}), telegram, grace=3.0)
    await running.start()
    photo = samples.jpeg(96, 64)
    bob, carol = private_chat(BOB), private_chat(CAROL)
    delays: list[float] = []
    try:
        for index in range(FLOOD):
            flood_message(telegram, index, photo)
        await telegram.wait_for(lambda: telegram.sent(FLOODER.id), 10)  # the bot is busy with the flood
        for _ in range(3):
            sent_at = time.monotonic()
            helped = telegram.user_sends(bob, BOB, text="/help")
            upscale = telegram.user_sends(carol, CAROL, photo=photo, caption="/upscale 2")
            delays.append(await answer_delay(telegram, bob.id, helped["message_id"], sent_at, 5))
            delays.append(await answer_delay(telegram, carol.id, upscale["message_id"], sent_at, 5))
            await asyncio.sleep(1.0)
        result_at = time.monotonic()
        await telegram.wait_for(lambda: len([m for m in telegram.sent(carol.id) if m.media]) >= 3, 30)
        results_waited = time.monotonic() - result_at
        print(f"other users answered after median {statistics.median(delays):.2f} s, max {max(delays):.2f} s; "
              f"Carol's last result {results_waited:.2f} s after her last acknowledgement")
        assert max(delays) < ANSWER_WITHIN_S, delays

        # the flood settles: no job left in flight, the bot still running, a bounded number of notices
        async def settled() -> bool:
            states = await job_states(settings, FLOODER.id)
            return bool(states) and set(states) <= FINAL_STATES
        deadline = time.monotonic() + 60
        while not await settled():
            assert time.monotonic() < deadline, await job_states(settings, FLOODER.id)
            await asyncio.sleep(0.5)
        assert not running._task.done()
        notices = [m for m in telegram.sent(FLOODER.id) if m.text == bot_texts.FLOOD_NOTICE]
        assert 1 <= len(notices) <= 2
        assert len(telegram.sent(FLOODER.id)) < FLOOD // 4, "the flood was answered message by message"
        assert telegram.stats["internal_errors"] == 0
        # and the bot still answers the flooder once the flood is over
        await asyncio.sleep(1.0)
        after = telegram.user_sends(private_chat(FLOODER), FLOODER, text="/help")
        await answer_delay(telegram, FLOODER.id, after["message_id"], time.monotonic(), 15)
    finally:
        await running.stop()
