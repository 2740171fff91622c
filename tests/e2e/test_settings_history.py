"""/settings (a person's defaults; a group's, for its admins) and /history (resending with no service call)."""

from __future__ import annotations

from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB, size_of
from tests.e2e.helpers import media, wait_media
from tests.fakes import samples


def buttons(message) -> list[str]:
    return [button["callback_data"] for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for button in row if "callback_data" in button]


async def reply_to(telegram, chat, user, text: str):
    asked = telegram.user_sends(chat, user, text=text)
    await telegram.wait_for(lambda: any(m.reply_to_message_id == asked["message_id"] for m in telegram.sent(chat.id)))
    return next(m for m in telegram.sent(chat.id) if m.reply_to_message_id == asked["message_id"])


async def test_history_resends_a_result_without_calling_the_service(bot, telegram, sandbox, alice_chat):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(90, 60), caption="/upscale 2")
    [result] = await wait_media(telegram, alice_chat.id)
    tasks = len(sandbox.tasks)
    listing = await reply_to(telegram, alice_chat, ALICE, "/history")
    assert "Upscale ×2" in listing.text and "done" in listing.text
    telegram.user_presses(alice_chat, ALICE, listing.message_id, buttons(listing)[0])
    resent = (await wait_media(telegram, alice_chat.id, 2))[1]
    assert resent.media == result.media and size_of(resent.media) == (180, 120)
    assert resent.reply_to_message_id == listing.message_id
    assert len(sandbox.tasks) == tasks  # Telegram kept the file: the service was not asked again


async def test_group_settings_are_refused_to_a_non_admin(bot, telegram, group_chat):
    telegram.members.make_admin(group_chat, ALICE)
    telegram.members.join(group_chat, BOB)
    refusal = await reply_to(telegram, group_chat, BOB, "/settings")
    assert refusal.text == bot_texts.SETTINGS_ADMINS_ONLY and not refusal.reply_markup
    panel = await reply_to(telegram, group_chat, ALICE, "/settings")
    assert "lang:?" in buttons(panel)
    # Bob presses the admin's panel: refused, and nothing changes
    query = telegram.user_presses(group_chat, BOB, panel.message_id, "set:followups")
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    assert telegram.callback_answers[query]["text"] == bot_texts.SETTINGS_ADMINS_ONLY
    assert telegram.message(group_chat.id, panel.message_id)["reply_markup"] == panel.reply_markup


async def test_default_upscale_factor_and_style(bot, telegram, alice_chat):
    panel = await reply_to(telegram, alice_chat, ALICE, "/settings")
    query = telegram.user_presses(alice_chat, ALICE, panel.message_id, "set:up")
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    query = telegram.user_presses(alice_chat, ALICE, panel.message_id, "set:st:art")
    await telegram.wait_for(lambda: query in telegram.callback_answers)
    telegram.user_presses(alice_chat, ALICE, panel.message_id, "set:st:art:oil")
    await telegram.wait_for(lambda: "Art style: " in str(telegram.message(alice_chat.id, panel.message_id)))
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(50, 40), caption="/upscale")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (200, 160)
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(50, 40), caption="/art")
    results = await wait_media(telegram, alice_chat.id, 2)
    assert results[1].caption.startswith("✅ Art: oil")
    assert len(media(telegram, alice_chat.id)) == 2
