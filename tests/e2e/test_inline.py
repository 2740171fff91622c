"""Inline mode end to end: `@bot` shares a person's own results; `@bot <description>` draws a picture in the
inline message; a refused person gets only a button; typing makes no job; a failure charges nothing."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest

from bot.store import JobRepository, JobState, NewJob, create_engine, session_factory
from bot.tg.handlers.inline import FeedbackWatch
from tests.e2e.conftest import ALICE, BOB, RunningBot, size_of
from tests.e2e.helpers import job_states, settled, wait_media
from tests.e2e.test_credits import balance, books
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_inline import InlineMessage
from tests.fakes.telegram_models import User, private_chat
from tests.harness import free_port


@pytest.fixture
def telegram_inline(telegram: FakeTelegram) -> FakeTelegram:
    """The fake with inline mode and inline feedback on (BotFather's /setinline, /setinlinefeedback)."""
    telegram.inline.enabled = True
    return telegram


async def answered(telegram: FakeTelegram, query_id: str) -> dict:
    """The bot's answer to an inline query, once given."""
    await telegram.wait_for(lambda: telegram.inline.queries[query_id].answer is not None, timeout=10)
    return telegram.inline.queries[query_id].answer


async def make(telegram: FakeTelegram, user, text: str, count: int) -> list:
    """The user draws a picture in their chat with the bot; the results there so far."""
    chat = private_chat(user)
    telegram.user_sends(chat, user, text=text)
    return await wait_media(telegram, chat.id, count)


def photo_ids(answer: dict) -> list[str]:
    return [result["photo_file_id"] for result in answer["results"] if "photo_file_id" in result]


def file_id(telegram: FakeTelegram, message) -> str:
    """The file id of a photo the bot sent (its largest size)."""
    return telegram._state.message(message.chat_id, message.message_id).photo[-1]["file_id"]


async def test_an_empty_query_lists_only_ones_own_results_newest_first(telegram_inline, bot):
    telegram = telegram_inline
    first = await make(telegram, ALICE, "/imagine anime a cat on a roof", 1)
    both = await make(telegram, ALICE, "/imagine cartoon a dog in a boat", 2)
    [bobs] = await make(telegram, BOB, "/imagine anime a fox", 1)
    answer = await answered(telegram, telegram.inline.user_types(ALICE, ""))
    assert photo_ids(answer) == [file_id(telegram, both[1]), file_id(telegram, first[0])]
    assert file_id(telegram, bobs) not in photo_ids(answer)
    assert answer["is_personal"] and answer["cache_time"] <= 10 and answer["next_offset"] == ""
    # a word naming a style (or an operation) filters them; a description also offers Generate
    filtered = await answered(telegram, telegram.inline.user_types(ALICE, "cartoon"))
    assert photo_ids(filtered) == [file_id(telegram, both[1])]
    assert any(result["type"] == "article" for result in filtered["results"])


async def delivered_rows(settings, user_id: int, file_ids: list[str | list[str]]) -> None:
    """Store delivered jobs of a user with these result files, a list for an album (a long history, without
    drawing each)."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session, session.begin():
            jobs = JobRepository(session)
            start = datetime.now(UTC) - timedelta(hours=1)
            for number, file in enumerate(file_ids):
                now = start + timedelta(seconds=number)
                job = await jobs.add(NewJob(chat_id=user_id, user_id=user_id, reply_to_message_id=None,
                                            operation="imagine", args={"prompt": "p", "style": "anime", "size": "1:1"},
                                            inputs=[], deadline_at=now + timedelta(hours=1)), now=now)
                files = file if isinstance(file, list) else [file]
                await jobs.update(job.id, owner=None, state=JobState.DELIVERED, finished_at=now,
                                  result_files=[{"id": each, "kind": "photo"} for each in files])
    finally:
        await engine.dispose()


async def test_results_beyond_fifty_come_in_pages(telegram_inline, bot, settings):
    telegram = telegram_inline
    files = [telegram.add_file(samples.jpeg(64 + number, 64)) for number in range(60)]
    await delivered_rows(settings, ALICE.id, files)
    first = await answered(telegram, telegram.inline.user_types(ALICE, ""))
    assert len(first["results"]) == 50 and first["next_offset"]
    second = await answered(telegram, telegram.inline.user_types(ALICE, "", offset=first["next_offset"]))
    assert second["next_offset"] == ""
    assert photo_ids(first) + photo_ids(second) == files[::-1]


async def test_an_album_is_listed_as_its_pictures(telegram_inline, bot, settings):
    telegram = telegram_inline
    single, *album = [telegram.add_file(samples.jpeg(64 + number, 64)) for number in range(4)]
    await delivered_rows(settings, ALICE.id, [single, album])
    answer = await answered(telegram, telegram.inline.user_types(ALICE, ""))
    assert photo_ids(answer) == [*album, single]


async def choose_generate(telegram: FakeTelegram, user, description: str) -> InlineMessage:
    """The user types a description and picks the first Generate result; the inline message it became."""
    query = telegram.inline.user_types(user, description)
    answer = await answered(telegram, query)
    generate = next(result for result in answer["results"] if result["type"] == "article")
    assert description in generate["title"] and generate["reply_markup"]
    message = telegram.inline.user_chooses(query, generate["id"])
    assert message is not None
    return message


async def test_choosing_generate_draws_the_picture_into_the_inline_message(telegram_inline, bot, sandbox):
    telegram = telegram_inline
    alice = private_chat(ALICE)
    telegram.user_sends(alice, ALICE, text="/start")  # she has a chat with the bot: it gets a file id there
    message = await choose_generate(telegram, ALICE, "a lighthouse at dawn")
    await telegram.wait_for(lambda: message.photo is not None, timeout=20)
    assert size_of(message.photo) == (1024, 1024)
    # everyone in that chat reads the caption: what was drawn, not what the requester paid for it
    assert "lighthouse" in message.caption and "credit" not in message.caption
    buttons = [button for row in message.reply_markup["inline_keyboard"] for button in row]
    assert any(button.get("switch_inline_query_current_chat") == "a lighthouse at dawn" for button in buttons)
    assert any(button.get("url", "").startswith("https://t.me/") for button in buttons)
    [copy] = await wait_media(telegram, alice.id)
    assert file_id(telegram, copy) == message.photo_file_id
    assert await settled(lambda: job_states(bot.settings), [("imagine", "delivered")]) == [("imagine", "delivered")]
    assert "Free today: 49 of 50" in await balance(telegram, alice, ALICE)  # charged once, for the picture
    assert await books(bot.settings) == []


async def test_a_person_who_never_started_the_bot_is_told_to_open_it_and_no_task_is_made(
        telegram_inline, bot, sandbox):
    """Issue 28, finding 5: without PUBLIC_URL, a Generate choice by someone the bot cannot write to was submitted
    to the service (and its credit given back when delivery failed: free work, again and again)."""
    telegram = telegram_inline
    spanish = User(1077, "Pablo", username="pablo", language_code="es")
    messages = [await choose_generate(telegram, spanish, "a red kite") for _ in range(3)]
    for message in messages:
        await telegram.wait_for(lambda message=message: message.text is not None and "bot" in message.text,
                                timeout=20)
        assert message.text.startswith("Solo puedo dibujar aquí") and message.photo is None
        [[button]] = message.reply_markup["inline_keyboard"]
        assert button["url"].startswith("https://t.me/") and button["url"].endswith("?start=inline")
    assert await job_states(bot.settings) == []
    assert not [r for r in sandbox.received if r.method == "POST"]
    # once they have started the bot, the same choice draws
    telegram.user_sends(private_chat(spanish), spanish, text="/start")
    message = await choose_generate(telegram, spanish, "a red kite")
    await telegram.wait_for(lambda: message.photo is not None, timeout=20)


async def test_an_odd_unicode_digit_as_the_offset_is_answered_from_the_start(telegram_inline, bot):
    """Issue 28: an inline query whose offset is "²" (a digit to str.isdigit, not to int) crashed its handler."""
    telegram = telegram_inline
    for offset in ("²", "٣", "1" * 40, "-1", "１"):
        answer = await answered(telegram, telegram.inline.user_types(ALICE, "a cat", offset=offset))
        assert answer["results"], offset  # the Generate offers, as for a first page


async def test_a_refused_person_gets_only_a_button_and_makes_no_task(telegram_inline, settings, sandbox):
    telegram = telegram_inline
    running = RunningBot(settings.model_copy(update={"bot_allowed_users": frozenset({ALICE.id})}), telegram)
    await running.start()
    try:
        answer = await answered(telegram, telegram.inline.user_types(BOB, "a cat"))
        assert answer["results"] == [] and answer["button"]["start_parameter"]
    finally:
        await running.stop()
    assert not [r for r in sandbox.received if r.method == "POST"]


async def test_typing_makes_no_job(telegram_inline, bot, settings, sandbox):
    telegram = telegram_inline
    queries = [telegram.inline.user_types(ALICE, "a lighthouse at dawn"[:length]) for length in range(1, 21)]
    for query in queries:
        await answered(telegram, query)
    assert await job_states(settings) == []
    assert not [r for r in sandbox.received if r.method == "POST"]


async def test_a_failure_edits_the_message_into_text_and_charges_nothing(telegram_inline, bot, sandbox, monkeypatch):
    telegram = telegram_inline
    monkeypatch.setattr(sandbox.faults, "fails_task", lambda: True)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    message = await choose_generate(telegram, ALICE, "a lighthouse at dawn")
    await telegram.wait_for(lambda: message.text is not None and message.text.startswith("❌"), timeout=20)
    assert message.photo is None
    assert await settled(lambda: job_states(bot.settings), [("imagine", "failed")]) == [("imagine", "failed")]
    assert "Free today: 50 of 50" in await balance(telegram, private_chat(ALICE), ALICE)  # nothing charged
    assert await books(bot.settings) == []


async def test_the_bot_says_when_inline_mode_or_inline_feedback_is_off(telegram, settings, caplog, monkeypatch):
    monkeypatch.setattr(FeedbackWatch, "QUERIES", 3)
    caplog.set_level(logging.INFO, logger="bot")
    running = RunningBot(settings, telegram)
    await running.start()  # inline mode is off (BotFather's /setinline): getMe says so
    try:
        assert "inline mode is off" in caplog.text
        telegram.inline.enabled, telegram.inline.feedback = True, False
        for query in [telegram.inline.user_types(ALICE, "") for _ in range(4)]:
            await answered(telegram, query)
        assert caplog.text.count("turn inline feedback on in BotFather") == 1
    finally:
        await running.stop()


async def test_a_choice_after_a_burst_of_typing_is_never_dropped(telegram_inline, bot):
    telegram = telegram_inline
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    first = telegram.inline.user_types(ALICE, "a lighthouse at dawn")
    generate = next(result for result in (await answered(telegram, first))["results"] if result["type"] == "article")
    for length in range(40):  # more than a sender's share of updates in flight at once
        telegram.inline.user_types(ALICE, "a lighthouse at dawn, in the fog"[:length + 1])
    message = telegram.inline.user_chooses(first, generate["id"])
    await telegram.wait_for(lambda: message.photo is not None, timeout=20)


async def test_an_inline_message_gone_before_the_result_still_delivers_it_in_the_chat(telegram_inline, bot):
    telegram = telegram_inline
    alice = private_chat(ALICE)
    telegram.user_sends(alice, ALICE, text="/start")
    message = await choose_generate(telegram, ALICE, "a lighthouse at dawn")
    del telegram.inline.messages[message.inline_message_id]  # Telegram no longer knows it (MESSAGE_ID_INVALID)
    await wait_media(telegram, alice.id)
    assert await settled(lambda: job_states(bot.settings), [("imagine", "delivered")]) == [("imagine", "delivered")]


async def test_with_public_url_a_person_who_never_started_the_bot_gets_the_picture_by_link(
        telegram_inline, settings):
    telegram = telegram_inline
    port = free_port()
    running = RunningBot(settings.model_copy(update={"public_url": f"http://127.0.0.1:{port}", "http_port": port}),
                         telegram)
    await running.start()
    try:
        message = await choose_generate(telegram, BOB, "a red kite")  # Bob never opened a chat with the bot
        await telegram.wait_for(lambda: message.photo is not None, timeout=20)
        assert size_of(message.photo) == (1024, 1024) and "kite" in message.caption
        assert await settled(lambda: job_states(running.settings), [("imagine", "delivered")]) == [
            ("imagine", "delivered")]
    finally:
        await running.stop()
