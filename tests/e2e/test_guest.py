"""Guest mode end to end (Bot API 10.0): `@bot upscale 2` as a reply to a photo in a chat the bot is not in.

Each test runs twice: long polling on SQLite, and webhook mode on PostgreSQL (both with an explicit
allowed_updates, which must name guest_message or Telegram never sends one).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import pytest

from bot.config import Settings
from bot.i18n import LANGUAGES, tr
from tests.e2e.conftest import ALICE, BOB, RunningBot, size_of
from tests.e2e.helpers import BOTH_MODES, job_states, media, mode_settings, settled, wait_media
from tests.e2e.test_credits import balance, books
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_guest import GuestMode
from tests.fakes.telegram_inline import InlineMessage
from tests.fakes.telegram_models import User, group, private_chat

CLUB = group(-100700, "Photo club")
CAROL = User(1003, "Carol", username="carol", language_code="es")
BOT = "@aiart_test_bot"


@pytest.fixture(params=BOTH_MODES)
async def settings(request: pytest.FixtureRequest, tmp_path, telegram: FakeTelegram, sandbox) -> Settings:
    """Long polling on an SQLite file, or webhook mode on PostgreSQL; guest mode on in BotFather."""
    telegram.guest.enabled = True
    return await mode_settings(request, tmp_path, telegram, sandbox, worker_id="guest", telegram_rate_limit="false")


@pytest.fixture
async def bot(settings: Settings, telegram: FakeTelegram) -> AsyncIterator[RunningBot]:
    running = RunningBot(settings, telegram)
    await running.start()
    yield running
    await running.stop()


def outside_club(telegram: FakeTelegram) -> None:
    telegram.guest.outside(CLUB)


async def placeholder(telegram: FakeTelegram, query_id: str) -> InlineMessage:
    """The inline message the bot's answer to a guest query became."""
    await telegram.wait_for(lambda: telegram.guest.message_of(query_id) is not None, timeout=10)
    message = telegram.guest.message_of(query_id)
    assert message is not None
    return message


def buttons(message: InlineMessage) -> list[dict]:
    return [button for row in (message.reply_markup or {}).get("inline_keyboard", []) for button in row]


def posts(sandbox) -> list:
    return [r for r in sandbox.received if r.method == "POST"]


def sends_into(telegram: FakeTelegram, chat_id: int) -> list:
    """Every call the bot made that names this chat (answered or refused)."""
    return [call for call in telegram.calls if call.params.get("chat_id") == chat_id]


async def test_upscale_as_a_reply_in_a_group_the_bot_is_not_in_edits_the_answer_into_the_picture(
        telegram, bot, sandbox):
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")  # a file id comes from her chat with the bot
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} upscale 2", reply_to=photo)
    message = await placeholder(telegram, query)
    answer = telegram.guest.queries[query].answer
    assert answer["type"] == "article" and answer["reply_markup"]  # a text with a keyboard: it can be edited
    assert "⏳" in message.text
    await telegram.wait_for(lambda: message.photo is not None, timeout=30)
    assert size_of(message.photo) == (640, 480)
    assert any(button.get("url", "").startswith("https://t.me/aiart_test_bot") for button in buttons(message))
    assert sends_into(telegram, CLUB.id) == []  # nothing tried to write into the group
    assert [call.status for call in telegram.calls if call.method == "answerGuestQuery"] == [200]  # answered once
    assert await settled(lambda: job_states(bot.settings), [("upscale", "delivered")]) == [("upscale", "delivered")]
    assert "Free today: 49 of 50" in await balance(telegram, private_chat(ALICE), ALICE)
    assert await books(bot.settings) == []


async def test_a_failure_edits_the_answer_into_one_sentence_and_gives_the_credits_back(
        telegram, bot, sandbox, monkeypatch):
    outside_club(telegram)
    monkeypatch.setattr(sandbox.faults, "fails_task", lambda: True)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    message = await placeholder(telegram, telegram.guest.summon(CLUB, ALICE, f"{BOT} colorize", reply_to=photo))
    await telegram.wait_for(lambda: (message.text or "").startswith("❌"), timeout=30)
    assert message.photo is None
    assert await settled(lambda: job_states(bot.settings), [("colorize", "failed")]) == [("colorize", "failed")]
    assert "Free today: 50 of 50" in await balance(telegram, private_chat(ALICE), ALICE)
    assert await books(bot.settings) == []


async def test_a_mention_that_arrives_as_message_and_guest_message_makes_one_job(telegram, bot):
    telegram.bot_added(CLUB, BOB)  # the bot is a member here: the mention comes twice
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    photo = telegram.user_sends(CLUB, BOB, photo=samples.jpeg(300, 200))["message_id"]
    await telegram.wait_for(lambda: len(telegram.sent(CLUB.id)) == 1)  # the bot's greeting when it was added
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} upscale", reply_to=photo)
    assert [kind for update in telegram._state.queued for kind in update if kind != "update_id"][-2:] == [
        "guest_message", "message"]
    message = await placeholder(telegram, query)
    await telegram.wait_for(lambda: message.photo is not None, timeout=30)
    assert size_of(message.photo) == (600, 400)
    assert await settled(lambda: job_states(bot.settings), [("upscale", "delivered")]) == [("upscale", "delivered")]
    assert len(telegram.sent(CLUB.id)) == 1  # no answer in the group itself
    assert len(telegram.guest.queries) == 1 and await job_states(bot.settings) == [("upscale", "delivered")]


async def test_a_refused_caller_gets_one_sentence_and_causes_no_task_and_no_charge(telegram, settings, sandbox):
    outside_club(telegram)
    running = RunningBot(settings.model_copy(update={"bot_allowed_users": frozenset({BOB.id})}), telegram)
    await running.start()
    try:
        photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
        query = telegram.guest.summon(CLUB, CAROL, f"{BOT} upscale 2", reply_to=photo)
        message = await placeholder(telegram, query)
        assert message.text == "Lo siento, este bot es privado."  # her app's language
        assert any(button.get("url", "").startswith("https://t.me/") for button in buttons(message))
        assert await job_states(running.settings) == []
    finally:
        await running.stop()
    assert posts(sandbox) == []
    assert sends_into(telegram, CLUB.id) == []


async def test_out_of_credits_edits_the_placeholder_and_calls_no_service(telegram, settings, sandbox):
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    running = RunningBot(settings.model_copy(update={"free_credits_per_day": 0}), telegram)
    await running.start()
    try:
        photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
        query = telegram.guest.summon(CLUB, ALICE, f"{BOT} upscale", reply_to=photo)
        message = await placeholder(telegram, query)
        await telegram.wait_for(lambda: "⏳" not in (message.text or ""), timeout=10)
        assert "credit" in message.text.lower()
        assert any(button.get("url", "").startswith("https://t.me/") for button in buttons(message))
        assert await books(running.settings) == []
    finally:
        await running.stop()
    assert posts(sandbox) == []


async def test_a_bare_mention_offers_the_operations_for_the_photo_and_a_press_runs_one_in_place(telegram, bot):
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    query = telegram.guest.summon(CLUB, ALICE, BOT, reply_to=photo)
    message = await placeholder(telegram, query)
    offered = {button["text"]: button["callback_data"] for button in buttons(message) if "callback_data" in button}
    assert offered and all(len(data.encode()) <= 64 for data in offered.values())
    upscale = next(data for text, data in offered.items() if "Upscale" in text)
    # someone else in the group cannot spend her photo's menu
    other = telegram.guest.user_presses(BOB, message.inline_message_id, upscale)
    await telegram.wait_for(lambda: other in telegram.callback_answers, timeout=10)
    assert telegram.callback_answers[other]["show_alert"]
    pressed = telegram.guest.user_presses(ALICE, message.inline_message_id, upscale)
    await telegram.wait_for(lambda: message.photo is not None, timeout=30)
    assert pressed in telegram.callback_answers
    assert size_of(message.photo)[0] >= 640
    assert await settled(lambda: job_states(bot.settings), [("upscale", "delivered")]) == [("upscale", "delivered")]


async def test_a_press_before_the_bot_has_read_its_own_answer_still_runs(telegram, bot):
    # people see the answer's buttons as soon as Telegram has it, before its reply reaches the bot
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    telegram.answer_latency["answerGuestQuery"] = 2.0
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    message = await placeholder(telegram, telegram.guest.summon(CLUB, ALICE, BOT, reply_to=photo))
    upscale = next(button["callback_data"] for button in buttons(message) if "Upscale" in button["text"])
    pressed = telegram.guest.user_presses(ALICE, message.inline_message_id, upscale)
    await telegram.wait_for(lambda: message.photo is not None, timeout=30)
    assert telegram.callback_answers[pressed].get("text") is None


async def test_words_it_does_not_understand_also_get_the_buttons(telegram, bot):
    outside_club(telegram)
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} make it sparkle please", reply_to=photo)
    message = await placeholder(telegram, query)
    assert any("callback_data" in button for button in buttons(message))
    assert await job_states(bot.settings) == []


async def test_a_description_without_a_photo_draws_it_in_place(telegram, bot):
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} a lighthouse at dawn")
    message = await placeholder(telegram, query)
    await telegram.wait_for(lambda: message.photo is not None, timeout=30)
    assert "lighthouse" in message.caption
    assert await settled(lambda: job_states(bot.settings), [("imagine", "delivered")]) == [("imagine", "delivered")]


async def test_a_sticker_reply_is_refused_in_one_sentence(telegram, bot, sandbox):
    outside_club(telegram)
    sticker = telegram.guest.post(CLUB, BOB, sticker=samples.png(512, 512))
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} upscale", reply_to=sticker)
    message = await placeholder(telegram, query)
    assert "photo" in message.text and "⏳" not in message.text
    assert await job_states(bot.settings) == [] and posts(sandbox) == []


async def test_someone_who_never_started_the_bot_without_public_url_is_refused_before_the_service(
        telegram, bot, sandbox):
    outside_club(telegram)
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} upscale", reply_to=photo)  # Alice never opened the bot
    message = await placeholder(telegram, query)
    await telegram.wait_for(lambda: "⏳" not in (message.text or ""), timeout=10)
    assert "Start" in message.text
    assert posts(sandbox) == [] and await job_states(bot.settings) == []


async def test_several_pictures_put_the_first_in_place_and_the_rest_in_the_bot(telegram, bot):
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 320))
    query = telegram.guest.summon(CLUB, ALICE, f"{BOT} headshot business 4", reply_to=photo)
    message = await placeholder(telegram, query)
    await telegram.wait_for(lambda: message.photo is not None, timeout=30)
    assert any("4" in button["text"] and button.get("url", "").startswith("https://t.me/")
               for button in buttons(message))
    assert len(await wait_media(telegram, ALICE.id, 4)) == 4  # all four in her chat with the bot


async def test_in_a_private_chat_between_two_people_nothing_lands_in_the_other_ones_chat_with_the_bot(
        telegram, bot):
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    telegram.user_sends(private_chat(BOB), BOB, text="/start")
    chat = GuestMode.between(ALICE, BOB)  # Alice's chat with Bob: its id is Bob's
    photo = telegram.guest.post(chat, BOB, photo=samples.jpeg(320, 240), caller=ALICE)
    query = telegram.guest.summon(chat, ALICE, f"{BOT} upscale", reply_to=photo)
    message = await placeholder(telegram, query)
    await telegram.wait_for(lambda: message.photo is not None, timeout=30)
    assert media(telegram, BOB.id) == []


@pytest.mark.parametrize("enabled", [True, False])
async def test_the_start_up_summary_says_whether_guest_mode_is_on(telegram, settings, caplog, enabled):
    caplog.set_level(logging.INFO, logger="bot.runtime")
    telegram.guest.enabled = enabled  # BotFather's switch, which getMe reports
    running = RunningBot(settings, telegram)
    await running.start()
    await running.stop()
    [summary] = [r.getMessage() for r in caplog.records if "is running" in r.getMessage()]
    [line] = [line for line in summary.splitlines() if line.strip().startswith("guest:")]
    assert ("on" if enabled else "off: turn it on in @BotFather") in line


@pytest.mark.parametrize("language", LANGUAGES)
async def test_help_tells_people_about_guest_mode_in_their_language(telegram, bot, language):
    from bot.tg.handlers.help import GUEST_HELP

    person = User(1010, "Dana", username="dana", language_code=language)
    chat = private_chat(person)
    telegram.user_sends(chat, person, text="/help")
    await telegram.wait_for(lambda: any(m.text for m in telegram.sent(chat.id)))
    [help_text] = [m.text for m in telegram.sent(chat.id) if m.text]
    expected = tr(language, GUEST_HELP, bot=BOT, example=f"{BOT} upscale 2")
    assert expected in help_text
    assert language == "en" or expected != tr("en", GUEST_HELP, bot=BOT, example=f"{BOT} upscale 2")


async def test_a_burst_of_mentions_in_one_busy_group_is_answered_every_time(telegram, bot):
    outside_club(telegram)
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    people = [User(2000 + number, f"P{number}", language_code="en") for number in range(30)]
    queries = [telegram.guest.summon(CLUB, person, BOT, reply_to=photo) for person in people]  # more than a chat's share
    await telegram.wait_for(lambda: all(telegram.guest.message_of(query) for query in queries), timeout=30)


async def test_hostile_mentions_are_answered_in_one_sentence_and_make_no_job(telegram, bot, sandbox, caplog):
    """Hostile review: odd Unicode digits, a bomb PNG document, a PDF and a sticker, as guest mentions: each is
    answered once, in a sentence, and none makes a job, calls the service or logs a traceback."""
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    pdf = telegram.guest.post(CLUB, BOB, document=(b"%PDF-1.4\n" + b"0" * 1000, "a.pdf", "application/pdf"))
    sticker = telegram.guest.post(CLUB, BOB, sticker=samples.png(64, 64))
    mentions = [(f"{BOT} upscale ²", photo), (f"{BOT} upscale ٣", photo),
                (f"{BOT} upscale {'9' * 3000}", photo), (f"{BOT} upscale 2", pdf), (f"{BOT} upscale 2", sticker),
                (f"{BOT} \u202e\u0000 2", photo)]
    for text, reply_to in mentions:
        query = telegram.guest.summon(CLUB, ALICE, text, reply_to=reply_to)
        message = await placeholder(telegram, query)
        assert message.text and "⏳" not in message.text, text
    assert await job_states(bot.settings) == []
    assert posts(sandbox) == []
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]


async def test_a_guest_answer_offers_no_video_operation(telegram, bot, sandbox):
    # an inline message holds a picture: a video made for it could not be shown there, yet would cost the
    # service a video task (refunded to the caller as undelivered)
    outside_club(telegram)
    telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
    photo = telegram.guest.post(CLUB, BOB, photo=samples.jpeg(320, 240))
    message = await placeholder(telegram, telegram.guest.summon(CLUB, ALICE, BOT, reply_to=photo))
    offered = [button["callback_data"] for button in buttons(message) if "callback_data" in button]
    assert not any(data.split(":")[2] in ("animate", "video") for data in offered)
    pressed = telegram.guest.user_presses(ALICE, message.inline_message_id, offered[-1])
    await telegram.wait_for(lambda: pressed in telegram.callback_answers, timeout=10)
    assert not any("video" in request.path for request in posts(sandbox))
