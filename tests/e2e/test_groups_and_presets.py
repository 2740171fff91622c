"""Phone-friendly arguments (/expand presets, /start deep links) and groups with privacy mode on."""

from __future__ import annotations

from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB, size_of
from tests.e2e.helpers import media, wait_media
from tests.fakes import samples


def buttons(message) -> dict[str, str]:
    return {button["text"]: button["callback_data"] for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for button in row if "callback_data" in button}


async def reply_to(telegram, chat, asked: dict):
    await telegram.wait_for(lambda: any(m.reply_to_message_id == asked["message_id"] for m in telegram.sent(chat.id)))
    return next(m for m in telegram.sent(chat.id) if m.reply_to_message_id == asked["message_id"])


async def test_expand_presets_make_the_right_geometry(bot, telegram, alice_chat):
    photo = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120))
    asked = telegram.user_sends(alice_chat, ALICE, text="/expand", reply_to=photo["message_id"])
    picker = await reply_to(telegram, alice_chat, asked)
    assert picker.text == "Expand: pick one, or type the numbers yourself."
    presets = buttons(picker)
    assert set(presets) == {"Square", "16:9", "9:16", "Margin 16 px"}  # 160x120 is already 4:3
    telegram.user_presses(alice_chat, ALICE, picker.message_id, presets["16:9"])
    [wide] = await wait_media(telegram, alice_chat.id)
    assert size_of(wide.media) == (213, 120)
    for label, expected in (("Square", (160, 160)), ("Margin 16 px", (192, 152))):
        asked = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/expand")
        picker = await reply_to(telegram, alice_chat, asked)
        count = len(media(telegram, alice_chat.id))
        telegram.user_presses(alice_chat, ALICE, picker.message_id, buttons(picker)[label])
        result = (await wait_media(telegram, alice_chat.id, count + 1))[-1]
        assert size_of(result.media) == expected


async def test_expand_of_a_document_asks_for_numbers(bot, telegram, alice_chat):
    asked = telegram.user_sends(alice_chat, ALICE, document=(samples.png(80, 60), "p.png", "image/png"),
                                caption="/expand")
    answer = await reply_to(telegram, alice_chat, asked)
    assert "padding in pixels" in answer.text and not answer.reply_markup


async def test_a_deep_link_opens_the_operations_flow(bot, telegram, alice_chat):
    asked = telegram.user_sends(alice_chat, ALICE, text="/start headshot")
    picker = await reply_to(telegram, alice_chat, asked)
    assert picker.text == "Pick a style:" and all(data.startswith("st:headshot:") for data in buttons(picker).values())
    asked = telegram.user_sends(alice_chat, ALICE, text="/start faceswap")
    prompt = await reply_to(telegram, alice_chat, asked)
    assert "first the face photo" in prompt.text
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(100, 100))
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(120, 90))
    [swapped] = await wait_media(telegram, alice_chat.id)
    assert size_of(swapped.media) == (120, 90)


async def test_face_swap_in_a_group_with_privacy_mode_on(bot, telegram, group_chat):
    telegram.privacy_mode = True
    asked = telegram.user_sends(group_chat, ALICE, text="/faceswap@aiart_test_bot")
    prompt = await reply_to(telegram, group_chat, asked)
    assert prompt.reply_markup == {"force_reply": True, "selective": True}
    # a plain photo never reaches the bot in a group with privacy mode on
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(90, 90))
    face = telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(100, 100), reply_to=prompt.message_id)
    second = await reply_to(telegram, group_chat, face)
    assert "reply to this message with the template photo" in second.text
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(120, 90), reply_to=second.message_id)
    [swapped] = await wait_media(telegram, group_chat.id)
    assert size_of(swapped.media) == (120, 90)
    assert telegram.file_downloads == 2  # the face and the template; the unseen photo was never fetched


async def test_the_bot_greets_a_group_it_is_added_to(bot, telegram, group_chat):
    telegram.bot_added(group_chat, BOB)
    await telegram.wait_for(lambda: bool(telegram.sent(group_chat.id)))
    [greeting] = telegram.sent(group_chat.id)
    assert greeting.text == bot_texts.GROUP_GREETING.format(bot="aiart_test_bot")
