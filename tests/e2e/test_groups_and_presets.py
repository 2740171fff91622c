"""Phone-friendly arguments (/expand presets, headshot counts, /start deep links) and groups with privacy mode on."""

from __future__ import annotations

import json

from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB, size_of
from tests.e2e.helpers import generation_posts, job_states, media, settled, texts, wait_media
from tests.fakes import samples
from tests.fakes.telegram_models import User, private_chat


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


def avatar_counts(sandbox) -> list[int]:
    """The headshot counts the service was asked for, oldest first."""
    return [template["num"] for r in sandbox.received if r.method == "POST" and r.path == "/v1/aiart/avatar"
            for template in json.loads(r.body)["avatarTemplateParams"]]


async def test_headshot_count_buttons_after_the_style_picker_make_that_many(bot, telegram, sandbox, alice_chat):
    asked = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 300), caption="/headshot")
    picker = await reply_to(telegram, alice_chat, asked)
    assert picker.text == "Pick a style:"
    telegram.user_presses(alice_chat, ALICE, picker.message_id, "st:headshot:fashion")
    # the bot is asking anyway: the count comes as buttons on the same message
    await telegram.wait_for(lambda: telegram.message(alice_chat.id, picker.message_id)["text"] == "How many headshots?")
    counts = {button["text"]: button["callback_data"]
              for row in telegram.message(alice_chat.id, picker.message_id)["reply_markup"]["inline_keyboard"]
              for button in row}
    assert counts == {"1 headshot": "ar:headshot:fashion 1", "2 headshots": "ar:headshot:fashion 2",
                      "4 headshots": "ar:headshot:fashion 4"}
    telegram.user_presses(alice_chat, ALICE, picker.message_id, counts["4 headshots"])
    album = await wait_media(telegram, alice_chat.id, 4)
    assert len(album) == 4 and album[0].caption.startswith("✅ Headshot: Fashion ×4")
    assert avatar_counts(sandbox) == [4]
    # typed in full, nothing is asked: the catalogue's default count
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 300), caption="/headshot business")
    await wait_media(telegram, alice_chat.id, 6)
    assert avatar_counts(sandbox) == [4, 2]


async def test_headshot_count_buttons_are_in_the_users_language(bot, telegram):
    ivan = User(2001, "Иван", username="ivan", language_code="ru")
    chat = private_chat(ivan)
    photo = telegram.user_sends(chat, ivan, photo=samples.jpeg(300, 300))
    menu = await reply_to(telegram, chat, photo)
    telegram.user_presses(chat, ivan, menu.message_id, "op:headshot")
    await telegram.wait_for(lambda: telegram.message(chat.id, menu.message_id)["text"] != menu.text)
    telegram.user_presses(chat, ivan, menu.message_id, "st:headshot:business")
    await telegram.wait_for(lambda: telegram.message(chat.id, menu.message_id)["text"] == "Сколько портретов?")
    labels = [button["text"] for row in telegram.message(chat.id, menu.message_id)["reply_markup"]["inline_keyboard"]
              for button in row]
    assert labels == ["1 портрет", "2 портрета", "4 портрета"]


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


async def test_face_swap_album_in_a_group_with_privacy_mode_on(bot, telegram, settings, group_chat):
    telegram.privacy_mode = True
    asked = telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(100, 100), caption="/faceswap@aiart_test_bot",
                                media_group_id="fs1")
    # the album's second photo carries no command: privacy mode keeps it from the bot
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(90, 90), media_group_id="fs1")
    prompt = await reply_to(telegram, group_chat, asked)
    assert prompt.reply_markup == {"force_reply": True, "selective": True}
    assert "Only the face photo of your album reached me" in prompt.text
    assert "Reply to this message with the template photo" in prompt.text
    assert await job_states(settings) == []  # nothing is queued with one image
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(120, 90), reply_to=prompt.message_id)
    [swapped] = await wait_media(telegram, group_chat.id)
    assert size_of(swapped.media) == (120, 90)  # the template's size: the reply was taken as the template
    assert swapped.reply_to_message_id == asked["message_id"]
    assert await settled(lambda: job_states(settings), [("faceswap", "delivered")]) == [("faceswap", "delivered")]
    assert telegram.file_downloads == 2  # the face and the reply; the unseen photo was never fetched


async def test_the_prompt_for_an_albums_unseen_photo_is_in_the_users_language(bot, telegram, group_chat):
    telegram.privacy_mode = True
    ivan = User(2002, "Иван", username="ivan2", language_code="ru")
    asked = telegram.user_sends(group_chat, ivan, photo=samples.jpeg(100, 100), caption="/faceswap@aiart_test_bot",
                                media_group_id="fs4")
    telegram.user_sends(group_chat, ivan, photo=samples.jpeg(90, 90), media_group_id="fs4")
    prompt = await reply_to(telegram, group_chat, asked)
    assert prompt.text.startswith("Из вашего альбома до меня дошло только одно: фото с лицом.")
    assert "пришлите фото-шаблон" in prompt.text


async def test_face_swap_album_in_a_group_the_bot_sees_whole_needs_no_reply(bot, telegram, settings, group_chat):
    # privacy mode off, or on with the bot an admin there: Telegram delivers every photo of the album
    for privacy, album in ((False, "fs2"), (True, "fs3")):
        telegram.privacy_mode = privacy
        if privacy:
            telegram.members.make_admin(group_chat, telegram.bot_user)
        count = len(media(telegram, group_chat.id))
        telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(100, 100), caption="/faceswap@aiart_test_bot",
                            media_group_id=album)
        telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(140, 100), media_group_id=album)
        swapped = (await wait_media(telegram, group_chat.id, count + 1))[-1]
        assert size_of(swapped.media) == (140, 100)
    assert not [text for text in texts(telegram, group_chat.id) if "reply" in text.lower()]
    delivered = [("faceswap", "delivered")] * 2
    assert await settled(lambda: job_states(settings), delivered) == delivered


async def test_generate_album_in_a_group_with_privacy_mode_on_says_what_it_used(bot, telegram, sandbox, group_chat):
    telegram.privacy_mode = True
    asked = telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(320, 240), caption="/generate the two together",
                                media_group_id="g3")
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(240, 320), media_group_id="g3")
    [result] = await wait_media(telegram, group_chat.id)
    [body] = generation_posts(sandbox)
    assert [item["type"] for item in body["content"]] == ["text", "image_url"]  # the one photo that was seen
    notes = [m.text for m in telegram.sent(group_chat.id)
             if m.reply_to_message_id == asked["message_id"] and m.text and "reached me" in m.text]
    assert notes == ["Only the photo with the command reached me: in a group I see only photos that carry my "
                     "command or reply to my message. I used that one."]


async def test_an_album_item_the_bot_saw_but_could_not_use_is_not_called_unseen(bot, telegram, sandbox, group_chat):
    # privacy mode off: both files of the album reach the bot; the second is no image
    telegram.user_sends(group_chat, ALICE, document=(samples.png(200, 150), "a.png", "image/png"),
                        caption="/generate the same, at night", media_group_id="g4")
    telegram.user_sends(group_chat, ALICE, document=(b"just text", "notes.txt", "text/plain"), media_group_id="g4")
    await wait_media(telegram, group_chat.id)
    [body] = generation_posts(sandbox)
    assert [item["type"] for item in body["content"]] == ["text", "image_url"]
    said = [m.text for m in telegram.sent(group_chat.id) if m.text]
    assert any("not an image" in text for text in said)
    assert not any("reached me" in text for text in said)


async def test_the_bot_greets_a_group_it_is_added_to(bot, telegram, group_chat):
    telegram.bot_added(group_chat, BOB)
    await telegram.wait_for(lambda: bool(telegram.sent(group_chat.id)))
    [greeting] = telegram.sent(group_chat.id)
    assert greeting.text == bot_texts.GROUP_GREETING.format(bot="aiart_test_bot")
