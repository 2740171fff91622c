"""Crash safety: the chaos run in CI size (SIGKILLs during intake, submit, poll and delivery), and redelivered updates."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.config import Settings
from bot.store import JobRepository, create_engine, session_factory
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import media, wait_acknowledged, wait_media
from tests.fakes import samples
from tests.harness.chaos import PHASES, ChaosConfig, run_chaos


async def stored_jobs(settings: Settings) -> int:
    """How many jobs the bot's database holds."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            return sum((await JobRepository(session).counts_by_state()).values())
    finally:
        await engine.dispose()


@pytest.mark.timeout(200)
async def test_killing_the_bot_loses_nothing_and_leaves_nothing_unfinished(tmp_path: Path):
    # timeout: how long the run may take to settle after the last kill, with room for a loaded machine
    report = await run_chaos(ChaosConfig(jobs=30, kills=3, seed=20241, chats=12, timeout=120, workdir=tmp_path),
                             say=lambda line: None)
    assert report.kills == 3
    assert set(report.kill_phases) <= set(PHASES)  # each kill fired in the phase it was armed for
    assert len(set(report.kill_phases)) == 3
    assert report.lost == 0, report.table()
    assert report.stuck == 0, report.table()
    # a result goes out again only when its kill fell between Telegram's answer and the commit after it
    assert report.unexplained_duplicates == 0, report.table()
    assert report.delivered + report.failed_told == report.jobs
    assert report.clean_exit
    # every job reserved its price under the kills, and was charged or refunded exactly as it ended
    assert report.ledger_problems == [], report.ledger_problems


@pytest.mark.parametrize("task_seconds", [4.0])
async def test_an_update_sent_again_after_a_crash_does_not_queue_a_second_job(bot, telegram, settings, alice_chat):
    request = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
    await wait_acknowledged(telegram, alice_chat.id, request["message_id"])
    await bot.stop()
    # a bot killed after storing the job but before confirming the update gets the same message again
    telegram.redeliver(request)
    await bot.start()
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.reply_to_message_id == request["message_id"]
    assert await stored_jobs(settings) == 1  # one job, not two
    assert telegram.pending_updates == 0  # taken, and confirmed
    # the 👀 (or a status message) once; the final mark after the result is no second acknowledgement
    acknowledgements = [call for call in telegram.calls
                        if (call.method == "setMessageReaction" and "👀" in str(call.params.get("reaction")))
                        or (call.method == "sendMessage" and str(call.params.get("text", "")).startswith("⏳"))]
    assert len(acknowledgements) == 1
    assert len(media(telegram, alice_chat.id)) == 1


@pytest.mark.parametrize("task_seconds", [0.2])
async def test_an_update_sent_again_after_its_result_went_out_is_not_answered_twice(bot, telegram, settings,
                                                                                     alice_chat):
    request = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
    await wait_media(telegram, alice_chat.id)
    await bot.stop()
    # killed after the job was done but before Telegram heard the update was handled: it comes again
    telegram.redeliver(request)
    await bot.start()
    await telegram.wait_for(lambda: telegram.pending_updates == 0)  # taken, and confirmed
    await bot.stop()  # whatever it was going to do with the update is done
    assert len(media(telegram, alice_chat.id)) == 1
    assert await stored_jobs(settings) == 1  # one job, not two
