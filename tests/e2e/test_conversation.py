"""The conversation around jobs: menus, replies, groups, /status, /cancel, failures, commands, restarts."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.conftest import ALICE, BOB, RunningBot, size_of
from tests.e2e.helpers import job_states, media, settled, texts, wait_handled, wait_media, wait_text
from tests.fakes import samples


async def test_commands_are_registered_at_start(bot, telegram):
    names = [c["command"] for c in telegram.my_commands()]
    assert {"upscale", "imagine", "headshot", "faceswap", "status", "cancel", "help"} <= set(names)


async def test_help_lists_every_operation(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/start")
    text = await wait_text(telegram, alice_chat.id, "Commands:")
    for usage in ("/upscale [2|4]", "/headshot <style> [count]", "/expand", "/removebg", "/replace"):
        assert usage in text


async def test_photo_without_command_gets_the_menu(bot, telegram, alice_chat):
    photo = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120))
    await wait_text(telegram, alice_chat.id, "What should I do")
    menu = next(m for m in telegram.sent(alice_chat.id) if m.reply_markup)
    assert menu.reply_to_message_id == photo["message_id"]
    telegram.user_presses(alice_chat, ALICE, menu.message_id, "op:upscale:4")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (640, 480)
    assert result.reply_to_message_id == photo["message_id"]


async def test_menu_style_choice_for_headshot(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 300))
    await wait_text(telegram, alice_chat.id, "What should I do")
    menu = next(m for m in telegram.sent(alice_chat.id) if m.reply_markup)
    telegram.user_presses(alice_chat, ALICE, menu.message_id, "op:headshot")
    await wait_text(telegram, alice_chat.id, "Pick a style")
    telegram.user_presses(alice_chat, ALICE, menu.message_id, "st:headshot:fashion")
    await wait_text(telegram, alice_chat.id, "How many headshots?")
    telegram.user_presses(alice_chat, ALICE, menu.message_id, "ar:headshot:fashion 1")
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.reply_to_message_id == menu.reply_to_message_id  # the photo the menu was for


async def test_command_replying_to_a_photo(bot, telegram, alice_chat):
    photo = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(150, 100))
    await wait_text(telegram, alice_chat.id, "What should I do")
    telegram.user_sends(alice_chat, ALICE, text="/expand 5", reply_to=photo["message_id"])
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (160, 110)


async def test_group_chat_with_addressed_command(bot, telegram, group_chat, settings):
    telegram.user_sends(group_chat, BOB, photo=samples.jpeg(100, 80))  # no menu spam in groups
    telegram.user_sends(group_chat, BOB, photo=samples.jpeg(100, 80), caption="/upscale@aiart_test_bot 2")
    telegram.user_sends(group_chat, BOB, photo=samples.jpeg(100, 80), caption="/upscale@some_other_bot 2")
    [result] = await wait_media(telegram, group_chat.id)
    assert size_of(result.media) == (200, 160)
    await wait_handled(telegram)  # the photo and the other bot's command made no job: one row, delivered once
    assert await settled(lambda: job_states(settings), [("upscale", "delivered")]) == [("upscale", "delivered")]
    assert len(media(telegram, group_chat.id)) == 1
    assert not any("What should I do" in t for t in texts(telegram, group_chat.id))


async def test_bad_arguments_get_a_clear_reply_and_a_failed_job_row(bot, telegram, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 80), caption="/upscale 7")
    text = await wait_text(telegram, alice_chat.id, "2 or 4")
    assert "/upscale [2|4]" in text
    assert await job_states(settings) == [("upscale", "failed")]


async def test_command_without_image_explains_what_to_send(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/colorize")
    await wait_text(telegram, alice_chat.id, "needs a photo")


@pytest.mark.parametrize("task_seconds", [60.0])
async def test_status_and_cancel(bot, telegram, alice_chat, sandbox, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 80), caption="/colorize")
    await telegram.wait_for(lambda: len(sandbox.tasks) == 1)
    # the row says running once the service's answer is stored, a moment after the service made the task
    assert await settled(lambda: job_states(settings), [("colorize", "running")]) == [("colorize", "running")]
    telegram.user_sends(alice_chat, ALICE, text="/status")
    status = await wait_text(telegram, alice_chat.id, "Your jobs in progress")
    assert "Colorized — processing" in status
    telegram.user_sends(alice_chat, ALICE, text="/cancel")
    await wait_text(telegram, alice_chat.id, "Cancelled 1 job")
    assert await job_states(settings) == [("colorize", "cancelled")]
    # even once the service finishes, nothing is delivered
    task = next(iter(sandbox.tasks.values()))
    sandbox.config.task_seconds = 0
    task.due_at = 0
    await asyncio.sleep(2.5)
    assert media(telegram, alice_chat.id) == []


async def test_failed_task_tells_the_user(bot, telegram, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, text="/imagine none sandbox-fail a vase")
    text = await wait_text(telegram, alice_chat.id, "couldn't process")
    assert "try again" in text.lower()
    assert await job_states(settings) == [("imagine", "failed")]


async def test_unsuitable_content_is_explained(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/imagine none sandbox-nsfw a vase")
    await wait_text(telegram, alice_chat.id, "unsuitable content")


async def test_balance_shows_everyone_their_credits_and_only_admins_the_services(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/balance")
    shown = await wait_text(telegram, alice_chat.id, "Service credits:")
    assert "Your credits: 0" in shown
    bob_chat = alice_chat.__class__(BOB.id)
    telegram.user_sends(bob_chat, BOB, text="/balance")
    shown = await wait_text(telegram, bob_chat.id, "Your credits: 0")
    assert "Service credits" not in shown


@pytest.mark.parametrize("task_seconds", [2.5])
async def test_restart_after_submission_delivers_exactly_once(settings, telegram, sandbox, alice_chat, db_url):
    settings = settings.model_copy(update={"database_url": db_url})  # SQLite and PostgreSQL
    first = RunningBot(settings, telegram)
    await first.start()
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(200, 100), caption="/upscale 2")
    await telegram.wait_for(lambda: len(sandbox.tasks) == 1)
    await first.stop()
    assert media(telegram, alice_chat.id) == []
    second = RunningBot(settings, telegram)
    await second.start()
    try:
        [result] = await wait_media(telegram, alice_chat.id)
        assert size_of(result.media) == (400, 200)
        await asyncio.sleep(1.5)
        assert len(media(telegram, alice_chat.id)) == 1
        posts = [r for r in sandbox.received if r.method == "POST" and r.path.endswith("/imgupscale")]
        assert len(posts) == 1
        assert await job_states(settings) == [("upscale", "delivered")]
    finally:
        await second.stop()
