"""How a request is acknowledged: a reaction for a quick job, a status message for a slow one."""

from __future__ import annotations

from bot.tg.texts import REACTION_DONE
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import texts, wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, SentMessage

EYES = "👀"


def statuses(telegram: FakeTelegram, chat_id: int) -> list[SentMessage]:
    """The status messages the bot sent into a chat, deleted ones too."""
    return [m for m in telegram.sent(chat_id) if m.text and m.text.startswith("⏳")]


def calls_in_chat(telegram: FakeTelegram, chat_id: int) -> list[str]:
    """The Bot API methods the bot called for this chat, in order."""
    return [call.method for call in telegram.calls if call.params.get("chat_id") in (chat_id, str(chat_id))]


async def test_a_quick_job_gets_a_reaction_and_no_status_message(bot, telegram, alice_chat):
    sent = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/upscale 2")
    [result] = await wait_media(telegram, alice_chat.id)
    assert result.reply_to_message_id == sent["message_id"]
    # 👀 while it runs, then the final mark once the result is there
    await telegram.wait_for(lambda: telegram._state.message(alice_chat.id, sent["message_id"]).reactions
                            == [{"type": "emoji", "emoji": REACTION_DONE}])
    assert texts(telegram, alice_chat.id) == []
    assert [m for m in calls_in_chat(telegram, alice_chat.id) if m != "getFile"] == [
        "setMessageReaction", "sendPhoto", "setMessageReaction"]
    first_reaction = next(call for call in telegram.calls if call.method == "setMessageReaction")
    assert EYES in str(first_reaction.params.get("reaction"))


async def test_a_slow_job_gets_a_status_message_that_goes_when_the_result_comes(bot, telegram, alice_chat):
    sent = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 200), caption="/expand 10")
    await wait_media(telegram, alice_chat.id)
    [status] = statuses(telegram, alice_chat.id)
    assert "queued" in status.text
    await telegram.wait_for(lambda: statuses(telegram, alice_chat.id)[0].deleted)
    assert telegram._state.message(alice_chat.id, sent["message_id"]).reactions == []


async def test_where_reactions_are_off_a_quick_job_gets_a_status_message(bot, telegram, alice_chat):
    telegram._state.reactions_off.add(alice_chat.id)
    sent = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/upscale 2")
    await wait_media(telegram, alice_chat.id)
    [status] = statuses(telegram, alice_chat.id)
    assert status.reply_to_message_id == sent["message_id"]
    await telegram.wait_for(lambda: statuses(telegram, alice_chat.id)[0].deleted)  # tidied like any status message
