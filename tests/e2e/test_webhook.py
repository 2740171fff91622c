"""Webhook mode end to end: the fake Bot API POSTs updates to the bot's webhook; the bot stores them, then handles them."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from sqlalchemy import func, select

from bot.config import Settings
from bot.http.webhook import SECRET_HEADER, derive_webhook_secret
from bot.sandbox import Sandbox
from bot.store import JobRepository, create_engine, session_factory
from bot.store.models import inbox_table
from bot.tg.app import ALLOWED_UPDATES
from tests.e2e.conftest import ALICE, BOB
from tests.e2e.helpers import media, wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.harness import BotProcess, InProcessBot, bot_settings, settings_of, sqlite_url, wait_until


@pytest.fixture
def values(tmp_path: Path, telegram: FakeTelegram, sandbox: Sandbox) -> dict[str, str]:
    return bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), webhook=True,
                        worker_id="webhook-worker", update_lease_s=2)


@pytest.fixture
async def webhook_bot(values: dict[str, str], telegram: FakeTelegram) -> AsyncIterator[InProcessBot]:
    running = InProcessBot(settings_of(values), telegram)
    await running.start()
    yield running
    await running.stop()


async def stored(settings: Settings) -> tuple[int, int]:
    """(updates in the inbox, jobs) in the bot's database."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            updates = await session.scalar(select(func.count()).select_from(inbox_table))
            jobs = sum((await JobRepository(session).counts_by_state()).values())
            return int(updates or 0), jobs
    finally:
        await engine.dispose()


async def post(url: str, body: dict, secret: str | None) -> int:
    headers = {SECRET_HEADER: secret} if secret is not None else {}
    async with aiohttp.ClientSession() as session, session.post(url, json=body, headers=headers) as response:
        return response.status


def an_update(update_id: int, message: dict) -> dict:
    return {"update_id": update_id, "message": copy.deepcopy(message)}


async def test_the_bot_sets_its_webhook_and_answers_updates_telegram_posts(webhook_bot, telegram, values):
    chat = private_chat(ALICE)
    request = telegram.user_sends(chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
    [result] = await wait_media(telegram, chat.id)
    assert result.reply_to_message_id == request["message_id"]
    [set_webhook] = [call for call in telegram.calls if call.method == "setWebhook"]
    assert set_webhook.params["url"] == values["TELEGRAM_WEBHOOK_URL"]
    # derived from the token, so every replica sets the same one
    assert set_webhook.params["secret_token"] == derive_webhook_secret(telegram.token)
    assert set(set_webhook.params["allowed_updates"]) == set(ALLOWED_UPDATES)
    assert not [call for call in telegram.calls if call.method == "getUpdates"]
    assert [d.status for d in telegram.webhook.deliveries] == [200]
    assert telegram.pending_updates == 0


async def test_a_request_without_the_right_secret_is_refused_and_nothing_is_stored(webhook_bot, telegram, values):
    url = values["TELEGRAM_WEBHOOK_URL"]
    chat = private_chat(BOB)
    message = telegram._state.user_message(chat, BOB, text="/start", caption=None, photo=None, document=None,
                                           reply_to=None, media_group_id=None, entities_for_commands=True).to_dict()
    assert await post(url, an_update(1, message), None) == 401
    assert await post(url, an_update(2, message), "wrong-secret") == 401
    assert await post(url, an_update(3, message), derive_webhook_secret(telegram.token)[:-1]) == 401
    await asyncio.sleep(0.5)
    assert await stored(webhook_bot.settings) == (0, 0)
    assert telegram.sent(chat.id) == []


async def test_an_update_posted_again_or_twice_at_once_is_handled_once(webhook_bot, telegram, values):
    url, secret = values["TELEGRAM_WEBHOOK_URL"], derive_webhook_secret(telegram.token)
    chat = private_chat(ALICE)
    message = telegram._state.user_message(chat, ALICE, text=None, caption="/upscale 2",
                                           photo=samples.jpeg(160, 120), document=None, reply_to=None,
                                           media_group_id=None, entities_for_commands=True).to_dict()
    update = an_update(900_000_001, message)
    # two at once (Telegram's retry racing the first, or two replicas), then a replay after it was handled
    assert await asyncio.gather(post(url, update, secret), post(url, update, secret)) == [200, 200]
    await wait_media(telegram, chat.id)
    assert await post(url, update, secret) == 200
    await asyncio.sleep(1.0)
    assert len(media(telegram, chat.id)) == 1
    assert await stored(webhook_bot.settings) == (1, 1)


@pytest.mark.timeout(120)
async def test_killing_a_webhook_bot_mid_flight_loses_nothing(tmp_path: Path, telegram: FakeTelegram,
                                                             sandbox: Sandbox, values: dict[str, str]):
    chats = [private_chat(ALICE), private_chat(BOB)]
    users = [ALICE, BOB]
    bot = BotProcess(values, tmp_path / "run", telegram)
    try:
        await bot.start()
        sent = []
        for round_ in range(3):
            for chat, user in zip(chats, users, strict=True):
                sent.append((chat.id, telegram.user_sends(chat, user, photo=samples.jpeg(160, 120 + round_),
                                                          caption="/upscale 2")["message_id"]))
            await asyncio.sleep(0.3)
            await bot.kill()  # SIGKILL: updates stored or in flight, jobs anywhere in their life
            await bot.start()
        # every message's own result (a count would also be reached by a duplicate before the last result)
        await wait_until(lambda: {(chat.id, m.reply_to_message_id) for chat in chats for m in media(telegram, chat.id)}
                         >= set(sent), 60, "every result", bot)
        await asyncio.sleep(1.0)
        for chat in chats:
            replied = sorted(m.reply_to_message_id for m in media(telegram, chat.id))
            expected = sorted(message_id for chat_id, message_id in sent if chat_id == chat.id)
            assert sorted(set(replied)) == expected  # none lost
            assert len(replied) - len(set(replied)) <= 3  # a duplicate only from a kill in a delivery's window
        assert telegram.pending_updates == 0
    finally:
        await bot.close()
