"""A style picker for a command that replied to a photo: pressing a style still finds the photo."""

from __future__ import annotations

from tests.e2e.conftest import ALICE
from tests.e2e.helpers import media, texts, wait_media, wait_text
from tests.fakes import samples
from tests.fakes.telegram import private_chat


async def test_art_replying_to_a_photo_then_a_style_pick_uses_that_photo(bot, telegram, group_chat):
    for chat in (private_chat(ALICE), group_chat):
        photo = telegram.user_sends(chat, ALICE, photo=samples.jpeg(160, 120))
        command = telegram.user_sends(chat, ALICE, text="/art@aiart_test_bot", reply_to=photo["message_id"])
        await wait_text(telegram, chat.id, "Pick a style")
        picker = next(m for m in telegram.sent(chat.id) if m.reply_markup and m.text == "Pick a style:")
        # what the button press brings: the picker, replying to the command, which has no reply of its own
        assert picker.reply_to_message_id == command["message_id"]
        telegram.user_presses(chat, ALICE, picker.message_id, "st:art:oil")
        [result] = await wait_media(telegram, chat.id)
        assert result.reply_to_message_id == command["message_id"]
        assert not any("needs a photo" in text for text in texts(telegram, chat.id))
        assert len(media(telegram, chat.id)) == 1
