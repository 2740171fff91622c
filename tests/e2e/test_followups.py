"""Follow-up buttons under results: again, another style, next operations; after a restart; in groups."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

from bot.operations.styles import load_catalogue
from bot.store.db import SQLITE_BUSY_TIMEOUT_MS
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB, size_of
from tests.e2e.helpers import job_states, media, settled, wait_media
from tests.fakes import samples


def buttons(message) -> list[str]:
    return [button["callback_data"] for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for button in row if "callback_data" in button]


def button(message, suffix: str) -> str:
    return next(data for data in buttons(message) if data.endswith(suffix))


async def test_upscale_of_a_result_is_twice_the_result(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(120, 90), caption="/colorize")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (120, 90)
    data = button(result, ":n:upscale:2")
    assert data.startswith("fu:") and len(data.encode()) <= 64
    telegram.user_presses(alice_chat, ALICE, result.message_id, data)
    results = await wait_media(telegram, alice_chat.id, 2)
    assert size_of(results[1].media) == (240, 180)
    assert results[1].reply_to_message_id == result.message_id
    # the next result again carries buttons, and on it too an upscale doubles
    telegram.user_presses(alice_chat, ALICE, results[1].message_id, button(results[1], ":n:upscale:2"))
    results = await wait_media(telegram, alice_chat.id, 3)
    assert size_of(results[2].media) == (480, 360)


def forget_result_files(database: Path) -> int:
    """Clear every job's recorded result files; in a thread, since the bot shares the test's event loop and a
    write it holds open there could never commit while this waits for its lock."""
    with sqlite3.connect(database, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000) as connection:
        return connection.execute("UPDATE jobs SET result_files = '[]'").rowcount


async def test_a_press_before_the_delivery_is_recorded_takes_the_picture_on_the_message(
        bot, telegram, alice_chat, tmp_path, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(120, 90), caption="/colorize")
    [result] = await wait_media(telegram, alice_chat.id)
    # once the bot has recorded the delivery (it would write the file back), as if the press arrived between
    # the result's send and the job's row recording its file; the bot's own busy timeout for its lock
    assert await settled(lambda: job_states(settings), [("colorize", "delivered")]) == [("colorize", "delivered")]
    assert await asyncio.to_thread(forget_result_files, tmp_path / "bot.db") == 1
    telegram.user_presses(alice_chat, ALICE, result.message_id, button(result, ":n:upscale:2"))
    results = await wait_media(telegram, alice_chat.id, 2)
    assert size_of(results[1].media) == (240, 180)
    assert results[1].reply_to_message_id == result.message_id


async def test_again_and_another_style(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 80), caption="/art oil")
    [result] = await wait_media(telegram, alice_chat.id)
    telegram.user_presses(alice_chat, ALICE, result.message_id, button(result, ":a"))
    again = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert size_of(again.media) == size_of(result.media)
    assert again.caption.startswith("✅ Art: Oil painting") and again.reply_to_message_id == result.message_id
    telegram.user_presses(alice_chat, ALICE, result.message_id, button(result, ":s"))
    await telegram.wait_for(lambda: any(m.text == "Pick a style:" and m.reply_markup
                                        for m in telegram.sent(alice_chat.id)))
    picker = next(m for m in telegram.sent(alice_chat.id) if m.text == "Pick a style:")
    other = next(data for data in buttons(picker) if not data.endswith(":oil"))
    telegram.user_presses(alice_chat, ALICE, picker.message_id, other)
    styled = (await wait_media(telegram, alice_chat.id, 3))[2]
    # the caption names the style by its label, never its id
    label = load_catalogue().group("art").get(other.rsplit(":", 1)[1]).label
    assert styled.caption.startswith(f"✅ Art: {label}")
    assert styled.reply_to_message_id == result.message_id
    assert size_of(styled.media) == size_of(result.media)


async def test_another_model_of_a_generated_picture_keeps_the_prompt(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, text="/generate gpt 3:2 a lighthouse at dawn")
    [result] = await wait_media(telegram, alice_chat.id)
    telegram.user_presses(alice_chat, ALICE, result.message_id, button(result, ":s"))
    await telegram.wait_for(lambda: any(m.text == "Pick a style:" and m.reply_markup
                                        for m in telegram.sent(alice_chat.id)))
    picker = next(m for m in telegram.sent(alice_chat.id) if m.text == "Pick a style:")
    telegram.user_presses(alice_chat, ALICE, picker.message_id, button(picker, ":flux"))
    other = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert other.caption.startswith("✅ Generate (FLUX.2 Pro, 3:2, 1k): a lighthouse at dawn")
    assert other.reply_to_message_id == result.message_id


async def test_an_album_gets_its_buttons_after_it_and_asks_which_picture(bot, telegram, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 80), caption="/headshot business 2")
    album = await wait_media(telegram, alice_chat.id, 2)
    await telegram.wait_for(lambda: any(m.text == bot_texts.FU_PROMPT for m in telegram.sent(alice_chat.id)))
    # the buttons' own message holds no picture: a press finds the album's through the job, recorded a moment
    # after the buttons are sent
    assert await settled(lambda: job_states(settings), [("headshot", "delivered")]) == [("headshot", "delivered")]
    keys = next(m for m in telegram.sent(alice_chat.id) if m.text == bot_texts.FU_PROMPT)
    assert keys.reply_to_message_id == album[0].message_id
    telegram.user_presses(alice_chat, ALICE, keys.message_id, button(keys, ":n:upscale:2"))
    await telegram.wait_for(lambda: telegram.message(alice_chat.id, keys.message_id)["text"].startswith("Which"))
    chooser = next(m for m in telegram.sent(alice_chat.id) if m.message_id == keys.message_id)
    telegram.user_presses(alice_chat, ALICE, keys.message_id, button(chooser, ":upscale:2:1"))
    upscaled = (await wait_media(telegram, alice_chat.id, 3))[2]
    width, height = size_of(album[1].media)
    assert size_of(upscaled.media) == (2 * width, 2 * height)


async def test_a_button_pressed_after_a_restart_still_works(bot, telegram, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(64, 48), caption="/restore")
    [result] = await wait_media(telegram, alice_chat.id)
    await bot.stop()
    await bot.start()
    telegram.user_presses(alice_chat, ALICE, result.message_id, button(result, ":n:upscale:4"))
    upscaled = (await wait_media(telegram, alice_chat.id, 2))[1]
    width, height = size_of(result.media)
    assert size_of(upscaled.media) == (4 * width, 4 * height)


async def test_in_a_group_only_the_owner_presses_unless_the_group_allows(bot, telegram, group_chat):
    telegram.members.make_admin(group_chat, ALICE)
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(64, 48), caption="/colorize")
    [result] = await wait_media(telegram, group_chat.id)
    query = telegram.user_presses(group_chat, BOB, result.message_id, button(result, ":a"))
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    assert telegram.callback_answers[query]["text"] == bot_texts.FU_NOT_YOURS
    assert len(media(telegram, group_chat.id)) == 1
    # an admin lets everyone use the buttons
    asked = telegram.user_sends(group_chat, ALICE, text="/settings")
    await telegram.wait_for(lambda: any(m.reply_to_message_id == asked["message_id"] and m.reply_markup
                                        for m in telegram.sent(group_chat.id)))
    panel = next(m for m in telegram.sent(group_chat.id) if m.reply_to_message_id == asked["message_id"])
    toggle = next(data for data in buttons(panel) if "followups" in data)
    pressed = telegram.user_presses(group_chat, ALICE, panel.message_id, toggle)
    await telegram.wait_for(lambda: pressed in telegram.callback_answers)
    telegram.user_presses(group_chat, BOB, result.message_id, button(result, ":a"))
    again = (await wait_media(telegram, group_chat.id, 2))[1]
    assert again.reply_to_message_id == result.message_id


async def test_a_double_tap_makes_one_job_and_a_later_press_another(bot, telegram, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 80), caption="/art oil")
    [result] = await wait_media(telegram, alice_chat.id)
    again = button(result, ":a")
    telegram.user_presses(alice_chat, ALICE, result.message_id, again)
    second = telegram.user_presses(alice_chat, ALICE, result.message_id, again)  # the same finger, at once
    await telegram.wait_for(lambda: second in telegram.callback_answers)
    assert telegram.callback_answers[second]["text"] == "Got it: that one is already on its way."
    await wait_media(telegram, alice_chat.id, 2)
    assert await settled(lambda: job_states(settings), [("art", "delivered")] * 2) == [("art", "delivered")] * 2
    await asyncio.sleep(5.2)  # past a double tap: pressed again on purpose, it makes another
    telegram.user_presses(alice_chat, ALICE, result.message_id, again)
    await wait_media(telegram, alice_chat.id, 3)
