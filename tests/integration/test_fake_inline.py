"""The fake Bot API's inline mode, driven by python-telegram-bot's Bot: as strict as Telegram's."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import telegram
from telegram import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InlineQueryResultArticle,
    InlineQueryResultCachedPhoto,
    InlineQueryResultsButton,
    InputMediaPhoto,
    InputTextMessageContent,
)
from telegram.error import BadRequest

from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User
from tests.fakes.telegram_inline import INLINE_ANSWER_TIMEOUT_S

ALICE = User(id=1001, first_name="Alice", username="alice")
KEYBOARD = InlineKeyboardMarkup([[InlineKeyboardButton("Open", url="https://t.me/aiart_test_bot?start=inline")]])


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def fake(clock: Clock) -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram(clock=clock) as fake:
        fake.inline.enabled = True
        yield fake


@pytest.fixture
async def bot(fake: FakeTelegram) -> AsyncIterator[telegram.Bot]:
    async with telegram.Bot(fake.token, base_url=f"{fake.url}/bot", base_file_url=f"{fake.url}/file/bot") as bot:
        yield bot


def article(result_id: str, markup: InlineKeyboardMarkup | None = KEYBOARD) -> InlineQueryResultArticle:
    return InlineQueryResultArticle(result_id, "Generate", InputTextMessageContent("drawing…"), reply_markup=markup)


async def test_get_me_says_whether_inline_mode_is_on(fake: FakeTelegram, bot: telegram.Bot):
    assert (await bot.get_me()).supports_inline_queries
    fake.inline.enabled = False
    assert not (await bot.get_me()).supports_inline_queries
    with pytest.raises(ValueError, match="inline mode is off"):
        fake.inline.user_types(ALICE, "a cat")


async def test_an_answer_is_taken_once_and_only_in_time(fake: FakeTelegram, bot: telegram.Bot, clock: Clock):
    query = fake.inline.user_types(ALICE, "a cat")
    [update] = await bot.get_updates(timeout=0)
    assert update.inline_query.id == query and update.inline_query.query == "a cat"
    assert await bot.answer_inline_query(query, [article("g:anime")])
    with pytest.raises(BadRequest, match="(?i)query is too old and response timeout expired or query ID is invalid"):
        await bot.answer_inline_query(query, [article("g:anime")])
    late = fake.inline.user_types(ALICE, "a dog")
    clock.now += INLINE_ANSWER_TIMEOUT_S + 0.1
    with pytest.raises(BadRequest, match="(?i)query is too old"):
        await bot.answer_inline_query(late, [])


@pytest.mark.parametrize(("results", "next_offset", "error"), [
    ([article("x" * 65)], None, "RESULT_ID_INVALID"),
    ([article("a"), article("a")], None, "RESULT_ID_DUPLICATE"),
    ([article(str(number)) for number in range(51)], None, "RESULTS_TOO_MUCH"),
    ([], "9" * 65, "NEXT_OFFSET_INVALID"),
    ([InlineQueryResultCachedPhoto("p", "no-such-file")], None, "wrong file identifier"),
])
async def test_answers_telegram_refuses(fake: FakeTelegram, bot: telegram.Bot, results, next_offset, error):
    query = fake.inline.user_types(ALICE, "")
    with pytest.raises(BadRequest, match="(?i)" + error):
        await bot.answer_inline_query(query, results, next_offset=next_offset)


async def test_a_results_button_opens_the_bot_with_a_valid_start_parameter(fake: FakeTelegram, bot: telegram.Bot):
    with pytest.raises(BadRequest, match="(?i)start_param_invalid"):
        await bot.answer_inline_query(fake.inline.user_types(ALICE, ""), [],
                                      button=InlineQueryResultsButton("Open", start_parameter="no spaces"))
    query = fake.inline.user_types(ALICE, "")
    assert await bot.answer_inline_query(query, [], button=InlineQueryResultsButton("Open", start_parameter="inline"))
    assert fake.inline.queries[query].answer["button"] == {"text": "Open", "start_parameter": "inline"}


async def test_a_chosen_result_has_an_inline_message_only_with_a_keyboard(fake: FakeTelegram, bot: telegram.Bot):
    query = fake.inline.user_types(ALICE, "a cat")
    await bot.answer_inline_query(query, [article("kept"), article("bare", markup=None)])
    assert fake.inline.user_chooses(query, "bare") is None
    message = fake.inline.user_chooses(query, "kept")
    updates = await bot.get_updates(timeout=0)
    chosen = [update.chosen_inline_result for update in updates if update.chosen_inline_result]
    assert [(result.result_id, result.inline_message_id) for result in chosen] == [
        ("bare", None), ("kept", message.inline_message_id)]
    fake.inline.feedback = False  # BotFather's /setinlinefeedback off: nothing comes
    fake.inline.user_chooses(query, "kept")
    later = await bot.get_updates(offset=updates[-1].update_id + 1, timeout=0)
    assert not [update for update in later if update.chosen_inline_result]


async def test_an_inline_message_is_edited_by_id_but_takes_no_upload(fake: FakeTelegram, bot: telegram.Bot):
    query = fake.inline.user_types(ALICE, "a cat")
    await bot.answer_inline_query(query, [article("g")])
    message = fake.inline.user_chooses(query, "g")
    assert await bot.edit_message_text("still drawing", inline_message_id=message.inline_message_id) is True
    assert message.text == "still drawing" and message.reply_markup is None
    picture = samples.jpeg(300, 200)
    with pytest.raises(BadRequest, match="(?i)invalid message content specified"):
        await bot.edit_message_media(InputMediaPhoto(picture), inline_message_id=message.inline_message_id)
    with pytest.raises(BadRequest, match="(?i)wrong file identifier"):
        await bot.edit_message_media(InputMediaPhoto("no-such-file"), inline_message_id=message.inline_message_id)
    file_id = fake.add_file(picture)
    assert await bot.edit_message_media(InputMediaPhoto(file_id, caption="done"),
                                        inline_message_id=message.inline_message_id) is True
    assert message.photo == picture and message.caption == "done" and message.text is None
    with pytest.raises(BadRequest, match="(?i)message_id_invalid"):
        await bot.edit_message_text("x", inline_message_id="AgAAAnot-a-message")
