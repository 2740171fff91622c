"""When the service runs out of credits, the admins hear about it once, and every user gets a clear message."""

from __future__ import annotations

import asyncio

from tests.e2e.conftest import ALICE, BOB
from tests.e2e.helpers import wait_text
from tests.fakes import samples
from tests.fakes.telegram import private_chat


async def test_admins_are_told_once_when_the_service_has_no_credits(bot, telegram, sandbox):
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")  # a bot may write only to who started it
    await wait_text(telegram, ALICE.id, "")
    sandbox.credits_remaining = 0
    chat = private_chat(BOB)
    for height in (120, 121, 122):
        telegram.user_sends(chat, BOB, photo=samples.jpeg(160, height), caption="/upscale 2")
    await telegram.wait_for(lambda: sum("credits" in (m.text or "") for m in telegram.sent(chat.id)) >= 3, 20)
    await wait_text(telegram, ALICE.id, "no credits left")  # ALICE (1001) is the e2e fixture's BOT_ADMINS
    await asyncio.sleep(0.5)
    alerts = [m for m in telegram.sent(ALICE.id) if "no credits left" in (m.text or "")]
    assert len(alerts) == 1  # one message for three failed jobs
