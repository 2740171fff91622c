"""The Mini App's ways in, with the bot running against the fake Bot API: `web_app` buttons under photos and
results in private chats, t.me links from groups answered by /start with the button, the menu button."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from bot.config import Settings
from bot.http.app_refs import PhotoRefs
from tests.conftest import migrated_sqlite
from tests.e2e.conftest import ALICE, BOB, POLL_TIME_SCALE
from tests.e2e.helpers import media, wait_media, wait_text
from tests.e2e.miniapp import PUBLIC_URL, app_settings
from tests.fakes import samples
from tests.fakes.telegram_models import User, private_chat
from tests.harness import bot_settings, settings_of


@pytest.fixture
def settings(tmp_path: Path, telegram, sandbox, sqlite_template: Path) -> Settings:
    return app_settings(telegram, sandbox, migrated_sqlite(sqlite_template, tmp_path / "bot.db"), tmp_path / "previews")


def keyboard(message) -> list[dict]:
    return [button for row in (message.reply_markup or {}).get("inline_keyboard", []) for button in row]


def app_buttons(message) -> list[dict]:
    return [button for button in keyboard(message) if "web_app" in button]


def opened(url: str) -> dict[str, str]:
    """The screen and picture a Mini App URL opens."""
    parts = urlsplit(url)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == PUBLIC_URL + "/app/"
    return {name: values[0] for name, values in parse_qs(parts.query).items()}


async def test_a_photo_in_a_private_chat_gets_the_mini_app_buttons_signed_for_its_sender(
        bot, telegram, alice_chat) -> None:
    sent = telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(120, 90))
    file_id = sent["photo"][-1]["file_id"]
    await wait_text(telegram, alice_chat.id, "What should I do with this photo?")
    menu = next(m for m in telegram.sent(alice_chat.id) if m.text == "What should I do with this photo?")
    buttons = app_buttons(menu)
    assert [button["text"] for button in buttons] == ["✏️ Paint", "↔️ Extend", "🎨 Styles"]
    screens = [opened(button["web_app"]["url"]) for button in buttons]
    assert [screen["s"] for screen in screens] == ["paint", "frame", "styles"]
    refs = PhotoRefs(telegram.token)
    assert {screen["p"] for screen in screens} == {refs.photo(ALICE.id, file_id)}
    assert refs.read(ALICE.id, screens[0]["p"]) is not None
    assert refs.read(BOB.id, screens[0]["p"]) is None  # the same link in another person's hands names nothing


async def test_a_result_in_a_private_chat_opens_the_mini_app_on_that_result(bot, telegram, alice_chat) -> None:
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(120, 90), caption="/colorize")
    [result] = await wait_media(telegram, alice_chat.id)
    buttons = app_buttons(result)
    assert [opened(button["web_app"]["url"]) for button in buttons] == [
        {"s": "paint", "p": "r.1.0"}, {"s": "frame", "p": "r.1.0"}, {"s": "styles", "p": "r.1.0"}]


async def test_a_result_in_a_group_links_to_the_private_chat_where_start_answers_with_the_button(
        bot, telegram, group_chat) -> None:
    telegram.user_sends(group_chat, ALICE, photo=samples.jpeg(120, 90), caption="/colorize")
    [result] = await wait_media(telegram, group_chat.id)
    assert app_buttons(result) == []  # Telegram refuses web_app buttons outside private chats
    links = [button["url"] for button in keyboard(result) if "url" in button]
    assert len(links) == 3 and all(link.startswith("https://t.me/") for link in links)
    payloads = [parse_qs(urlsplit(link).query)["start"][0] for link in links]
    assert payloads == ["app-paint-1-0", "app-frame-1-0", "app-styles-1-0"]

    alice_private = private_chat(ALICE)
    telegram.user_sends(alice_private, ALICE, text=f"/start {payloads[1]}")
    await wait_text(telegram, alice_private.id, "Tap the button below to open it.")
    answer = next(m for m in telegram.sent(alice_private.id) if m.text == "Tap the button below to open it.")
    [button] = app_buttons(answer)
    assert button["text"] == "↔️ Extend" and opened(button["web_app"]["url"]) == {"s": "frame", "p": "r.1.0"}

    bob_private = private_chat(BOB)
    telegram.user_sends(bob_private, BOB, text=f"/start {payloads[0]}")
    refusal = await wait_text(telegram, bob_private.id, "not yours")
    assert not any(app_buttons(m) for m in telegram.sent(bob_private.id)), refusal


async def test_the_menu_button_opens_my_results_in_each_persons_language(bot, telegram) -> None:
    default = telegram.menu_buttons.shown()
    assert default["type"] == "web_app" and default["text"] == "My results"
    assert opened(default["web_app"]["url"]) == {"s": "results"}
    lucia = User(1005, "Lucía", language_code="es")
    chat = private_chat(lucia)
    telegram.user_sends(chat, lucia, text="/start")
    await telegram.wait_for(lambda: telegram.menu_buttons.shown(chat.id).get("text") == "Mis resultados")
    assert opened(telegram.menu_buttons.shown(chat.id)["web_app"]["url"]) == {"s": "results"}


async def test_without_an_https_public_url_nothing_changes(telegram, sandbox, sqlite_template, tmp_path) -> None:
    from tests.harness import InProcessBot

    database = migrated_sqlite(sqlite_template, tmp_path / "plain.db")
    plain = InProcessBot(settings_of(bot_settings(telegram, sandbox, database, poll_time_scale=POLL_TIME_SCALE)),
                         telegram)
    await plain.start()
    try:
        chat = private_chat(ALICE)
        telegram.user_sends(chat, ALICE, photo=samples.jpeg(120, 90), caption="/colorize")
        [result] = await wait_media(telegram, chat.id)
        assert app_buttons(result) == [] and not any("url" in button for button in keyboard(result))
        assert telegram.menu_buttons.shown()["type"] == "default"
        # a link sent while the Mini App was on is answered, not taken for a help request
        telegram.user_sends(chat, ALICE, text="/start app-paint-1-0")
        await wait_text(telegram, chat.id, "This bot has no app to open.")
        assert media(telegram, chat.id) == [result]
    finally:
        await plain.stop()
