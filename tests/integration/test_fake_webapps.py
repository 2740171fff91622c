"""The fake Bot API's Mini App parts, driven by python-telegram-bot's Bot: web_app buttons only in private
chats and only to HTTPS, the chat menu button, and prepared inline messages, as strict as Telegram."""

from __future__ import annotations

import io
import re
import time
from collections.abc import AsyncIterator

import pytest
import telegram
from PIL import Image
from telegram import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InlineQueryResultArticle,
    InlineQueryResultCachedPhoto,
    InlineQueryResultPhoto,
    InputTextMessageContent,
    MenuButtonCommands,
    MenuButtonDefault,
    MenuButtonWebApp,
    WebAppInfo,
)
from telegram.error import BadRequest

from tests.fakes.telegram import FakeTelegram, User, group, private_chat

# raw calls on purpose: python-telegram-bot's own methods cannot send what Telegram refuses
pytestmark = pytest.mark.filterwarnings("ignore:Please use:telegram.warnings.PTBUserWarning")

ALICE = User(id=1001, first_name="Alice", username="alice")
BOB = User(id=1002, first_name="Bob")
CHAT = private_chat(ALICE)
GROUP = group(-100777)
APP = "https://bot.example.org/app/"


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        fake.user_sends(CHAT, ALICE, text="/start")
        fake.user_sends(GROUP, ALICE, text="/start")
        yield fake


def web_app_keyboard(url: str = APP) -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton("✏️ Paint", web_app=WebAppInfo(url))],
                                 [InlineKeyboardButton("Upscale", callback_data="up:1")]])


async def test_web_app_buttons_work_in_private_chats(fake: FakeTelegram, bot: telegram.Bot) -> None:
    sent = await bot.send_message(CHAT.id, "Your result", reply_markup=web_app_keyboard())
    assert sent.reply_markup.inline_keyboard[0][0].web_app.url == APP
    assert fake.sent(CHAT.id)[-1].reply_markup["inline_keyboard"][0][0]["web_app"] == {"url": APP}
    edited = await bot.edit_message_text("Edited", CHAT.id, sent.message_id, reply_markup=web_app_keyboard())
    assert edited.reply_markup.inline_keyboard[0][0].web_app.url == APP


async def test_web_app_buttons_are_refused_in_groups(fake: FakeTelegram, bot: telegram.Bot) -> None:
    with pytest.raises(BadRequest, match="(?i)^button_type_invalid$"):
        await bot.send_message(GROUP.id, "Your result", reply_markup=web_app_keyboard())
    sent = await bot.send_message(GROUP.id, "Your result")
    with pytest.raises(BadRequest, match="(?i)^button_type_invalid$"):
        await bot.edit_message_text("Edited", GROUP.id, sent.message_id, reply_markup=web_app_keyboard())
    assert [m.text for m in fake.sent(GROUP.id)] == ["Your result"]


@pytest.mark.parametrize("url", ["http://bot.example.org/app/", "tg://resolve?domain=x", "https://"])
async def test_web_app_urls_must_be_https(bot: telegram.Bot, url: str) -> None:
    with pytest.raises(BadRequest, match=f"(?i)inline keyboard button Web App URL '{re.escape(url)}' is invalid: "
                                         "Only HTTPS links are allowed"):
        await bot.send_message(CHAT.id, "Your result", reply_markup=web_app_keyboard(url))


async def test_menu_button_per_chat_and_default(fake: FakeTelegram, bot: telegram.Bot) -> None:
    assert await bot.get_chat_menu_button() == MenuButtonDefault()
    assert await bot.get_chat_menu_button(CHAT.id) == MenuButtonDefault()
    assert await bot.set_chat_menu_button(menu_button=MenuButtonCommands())
    assert await bot.get_chat_menu_button(CHAT.id) == MenuButtonCommands()
    mine = MenuButtonWebApp("My results", WebAppInfo(APP + "#results"))
    assert await bot.set_chat_menu_button(CHAT.id, mine)
    assert await bot.get_chat_menu_button(CHAT.id) == mine
    assert await bot.get_chat_menu_button(BOB.id) == MenuButtonCommands()
    assert fake.menu_buttons.per_chat[CHAT.id] == {"type": "web_app", "text": "My results",
                                                   "web_app": {"url": APP + "#results"}}
    assert fake.menu_buttons.shown(CHAT.id)["text"] == "My results"
    assert await bot.set_chat_menu_button(CHAT.id, MenuButtonDefault())  # back to the bot's default
    assert await bot.get_chat_menu_button(CHAT.id) == MenuButtonCommands()
    assert await bot.set_chat_menu_button()  # no button: the default is reset
    assert await bot.get_chat_menu_button(CHAT.id) == MenuButtonDefault()


async def test_menu_buttons_telegram_refuses(fake: FakeTelegram, bot: telegram.Bot) -> None:
    with pytest.raises(BadRequest, match="(?i)menu button Web App URL 'http://x.org/' is invalid: Only HTTPS"):
        await bot.set_chat_menu_button(CHAT.id, MenuButtonWebApp("App", WebAppInfo("http://x.org/")))
    with pytest.raises(BadRequest, match="(?i)invalid chat_id specified"):
        await bot.set_chat_menu_button(GROUP.id, MenuButtonCommands())
    with pytest.raises(BadRequest, match="(?i)invalid chat_id specified"):
        await bot.get_chat_menu_button(GROUP.id)
    with pytest.raises(BadRequest, match="(?i)MenuButton has unsupported type"):
        await bot.do_api_request("setChatMenuButton", {"menu_button": {"type": "url", "text": "x"}})
    with pytest.raises(BadRequest, match='(?i)can\'t find field "text"'):
        await bot.do_api_request("setChatMenuButton", {"menu_button": {"type": "web_app", "web_app": {"url": APP}}})
    assert fake.menu_buttons.per_chat == {} and fake.menu_buttons.default is None


async def test_prepared_messages_are_saved_for_a_user(fake: FakeTelegram, bot: telegram.Bot) -> None:
    photo = InlineQueryResultPhoto("r-17", "https://bot.example.org/r/17.jpg", "https://bot.example.org/r/17s.jpg",
                                   caption="Made with @aiart_test_bot",
                                   reply_markup=InlineKeyboardMarkup([[InlineKeyboardButton(
                                       "Try it", url="https://t.me/aiart_test_bot?start=r17")]]))
    before = int(time.time())
    prepared = await bot.save_prepared_inline_message(ALICE.id, photo, allow_user_chats=True, allow_group_chats=True)
    assert prepared.id and prepared.expiration_date.timestamp() > before
    cached = InlineQueryResultCachedPhoto("r-18", fake.add_file(_png()))
    article = InlineQueryResultArticle("a-1", "My picture", InputTextMessageContent("Look at this"))
    await bot.save_prepared_inline_message(ALICE.id, cached, allow_channel_chats=True)
    await bot.save_prepared_inline_message(BOB.id, article, allow_bot_chats=True)
    saved = fake.prepared_messages.saved
    assert [m.result["id"] for m in saved] == ["r-17", "r-18", "a-1"]
    assert saved[0].id == prepared.id and saved[0].user_id == ALICE.id
    assert saved[0].allow == {"allow_user_chats", "allow_group_chats"}
    assert saved[0].result["photo_url"] == "https://bot.example.org/r/17.jpg"
    assert saved[1].result["photo_file_id"] and saved[1].allow == {"allow_channel_chats"}
    assert [m.result["id"] for m in fake.prepared_messages.for_user(BOB.id)] == ["a-1"]
    assert len({m.id for m in saved}) == 3


@pytest.mark.parametrize(("result", "error"), [
    ({"type": "photo", "id": "1"}, 'can\'t find field "photo_file_id"'),
    ({"type": "article", "id": "1", "input_message_content": {"message_text": "x"}}, 'can\'t find field "title"'),
    ({"type": "article", "id": "1", "title": "t"}, 'can\'t find field "message_text"'),
    ({"type": "photo", "photo_file_id": "f"}, 'can\'t find field "id"'),
    ({"id": "1", "photo_file_id": "f"}, 'can\'t find field "type"'),
    ({"type": "photo", "id": "x" * 65, "photo_file_id": "f"}, "RESULT_ID_INVALID"),
    ({"type": "picture", "id": "1"}, 'type "picture" is unsupported for the inline query result'),
    ([{"type": "photo"}], "inline query result must be an object"),
    ({"type": "photo", "id": "1", "photo_file_id": "f", "reply_markup": {"inline_keyboard": [[
        {"text": "Open", "web_app": {"url": APP}}]]}}, "BUTTON_TYPE_INVALID"),
])
async def test_prepared_messages_telegram_refuses(fake: FakeTelegram, bot: telegram.Bot, result: object,
                                                   error: str) -> None:
    with pytest.raises(BadRequest, match="(?i)" + re.escape(error)):
        await bot.do_api_request("savePreparedInlineMessage", {"user_id": ALICE.id, "result": result})
    assert fake.prepared_messages.saved == []


async def test_prepared_messages_need_a_user_and_a_result(fake: FakeTelegram, bot: telegram.Bot) -> None:
    article = InlineQueryResultArticle("a-1", "My picture", InputTextMessageContent("Look at this"))
    with pytest.raises(BadRequest, match="(?i)invalid user_id specified"):
        await bot.save_prepared_inline_message(-100777, article)
    with pytest.raises(BadRequest, match="(?i)result isn't specified"):
        await bot.do_api_request("savePreparedInlineMessage", {"user_id": ALICE.id})


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 48), "red").save(buffer, "PNG")
    return buffer.getvalue()
