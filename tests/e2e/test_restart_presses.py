"""After a restart (SIGKILL or SIGTERM of a real `python -m bot`): a button pressed under a result from before it is
handled and answered, and a message Telegram sends again after a SIGKILL makes no second job."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.tg import followups
from tests.e2e.conftest import ALICE, BOB
from tests.e2e.helpers import media, wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, TgFaults, private_chat
from tests.harness import BotProcess, InProcessBot, bot_settings, settings_of, sqlite_url

pytestmark = pytest.mark.timeout(150)


def jobs_for(database: Path, chat_id: int, message_id: int, state: str | None = None) -> int:
    """How many jobs (in `state`, if given) answer one user message."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT count(*) FROM jobs WHERE chat_id = ? AND reply_to_message_id = ?"
                                  " AND state = coalesce(?, state)", (chat_id, message_id, state)).fetchone()[0]


UPSCALE = ":n:upscale:2"
UPSCALE_4 = ":n:upscale:4"


def button(message, suffix: str) -> str:
    """The callback data of the follow-up button under `message` whose data ends with `suffix`."""
    rows = (message.reply_markup or {}).get("inline_keyboard", [])
    return next(button["callback_data"] for row in rows for button in row
                if button.get("callback_data", "").startswith(f"{followups.PREFIX}:")
                and button["callback_data"].endswith(suffix))


def answers(telegram: FakeTelegram, query: str) -> int:
    return sum(1 for call in telegram.calls
               if call.method == "answerCallbackQuery" and call.params.get("callback_query_id") == query)


@pytest.fixture
def values(tmp_path: Path, telegram: FakeTelegram, sandbox) -> dict[str, str]:
    return bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), log_level="INFO")


@pytest.fixture
async def bot_process(tmp_path: Path, telegram: FakeTelegram, values: dict[str, str]) -> AsyncIterator[BotProcess]:
    process = BotProcess(values, tmp_path, telegram)
    yield process
    await process.close()


async def test_presses_under_old_results_work_after_sigkill_and_sigterm_and_a_resent_message_makes_one_job(
        bot_process: BotProcess, telegram: FakeTelegram, tmp_path: Path, values: dict[str, str]):
    database = tmp_path / "bot.db"
    alice, bob = private_chat(ALICE), private_chat(BOB)
    colorize = telegram.user_sends(alice, ALICE, photo=samples.jpeg(64, 48), caption="/colorize")
    await bot_process.start()
    [result] = await wait_media(telegram, alice.id, timeout=30)
    # "again" under the result: a job made from the result message (what a restart mistook for a redelivery)
    telegram.user_presses(alice, ALICE, result.message_id, button(result, f":{followups.AGAIN}"))
    await wait_media(telegram, alice.id, 2, timeout=30)
    # both recorded too (a result sent but not yet recorded when the process dies is sent again: not this test's case)
    await telegram.wait_for(lambda: jobs_for(database, alice.id, colorize["message_id"], "delivered") == 1
                            and jobs_for(database, alice.id, result.message_id, "delivered") == 1)

    # Bob's request is stored, then its acknowledgement hangs: the process dies with the update unconfirmed
    telegram.faults = TgFaults(rate=1.0, kinds=("timeout",), timeout_seconds=60,
                               methods=frozenset({"setMessageReaction", "sendMessage"}))
    request = telegram.user_sends(bob, BOB, photo=samples.jpeg(80, 60), caption="/restore")
    await telegram.wait_for(lambda: jobs_for(database, bob.id, request["message_id"]) == 1, timeout=30)
    await bot_process.kill()
    telegram.faults = None
    # pressed while the bot is down: the press comes in the first answer after the start, beside Bob's message
    first_press = telegram.user_presses(alice, ALICE, result.message_id, button(result, UPSCALE))

    await bot_process.start()
    upscaled = (await wait_media(telegram, alice.id, 3, timeout=30))[2]
    assert upscaled.reply_to_message_id == result.message_id and upscaled.caption.startswith("✅ Upscale")
    await wait_media(telegram, bob.id, timeout=30)  # Bob's job, stored before the kill, is delivered
    await telegram.wait_for(lambda: answers(telegram, first_press) == 1, timeout=10)
    assert await bot_process.terminate() == 0
    assert telegram.pending_updates == 0  # Bob's message came again, and was confirmed without a second job
    assert jobs_for(database, bob.id, request["message_id"]) == 1
    assert len(media(telegram, bob.id)) == 1

    # after a clean stop (SIGTERM), another press under the same result, pressed while the bot was down (another
    # button: the same one again within seconds would be a double tap, which makes nothing more)
    second_press = telegram.user_presses(alice, ALICE, result.message_id, button(result, UPSCALE_4))
    bot = InProcessBot(settings_of(values), telegram)
    await bot.start()
    try:
        again = (await wait_media(telegram, alice.id, 4, timeout=30))[3]
        assert again.reply_to_message_id == result.message_id
        await telegram.wait_for(lambda: answers(telegram, second_press) == 1, timeout=10)
    finally:
        await bot.stop()
    assert answers(telegram, first_press) == answers(telegram, second_press) == 1
