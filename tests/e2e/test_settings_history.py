"""/settings (a person's defaults; a group's, for its admins) and /history (resending with no service call)."""

from __future__ import annotations

from bot.chats.people import PeopleService
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.store import create_engine, session_factory
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB, size_of
from tests.e2e.helpers import job_states, media, settled, wait_media
from tests.fakes import samples
from tests.fakes.telegram_models import User, private_chat

CATALOGUE = build_catalogue(load_catalogue())
IVAN = User(2001, "Иван", username="ivan", language_code="ru")


def buttons(message) -> list[str]:
    return [button["callback_data"] for row in (message.reply_markup or {}).get("inline_keyboard", [])
            for button in row if "callback_data" in button]


async def reply_to(telegram, chat, user, text: str):
    asked = telegram.user_sends(chat, user, text=text)
    await telegram.wait_for(lambda: any(m.reply_to_message_id == asked["message_id"] for m in telegram.sent(chat.id)))
    return next(m for m in telegram.sent(chat.id) if m.reply_to_message_id == asked["message_id"])


async def test_history_resends_a_result_without_calling_the_service(bot, telegram, sandbox, alice_chat, settings):
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(90, 60), caption="/upscale 2")
    [result] = await wait_media(telegram, alice_chat.id)
    # the row says delivered just after the result is sent
    assert await settled(lambda: job_states(settings), [("upscale", "delivered")]) == [("upscale", "delivered")]
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


def catalogue_rows() -> set[str]:
    """The settings rows the catalogue calls for: a default per operation with default choices, a style per group."""
    return ({f"set:df:{operation.name}" for operation in CATALOGUE.values() if operation.default_choices}
            | {f"set:st:{operation.style_group}" for operation in CATALOGUE.values() if operation.style_group})


def people(settings) -> tuple[PeopleService, object]:
    engine = create_engine(settings.database_url)
    return PeopleService(session_factory(engine)), engine


async def press(telegram, chat, panel, data: str, then: str) -> None:
    """Press a button of a settings panel and wait until the panel says `then`."""
    telegram.user_presses(chat, ALICE, panel.message_id, data)
    await telegram.wait_for(lambda: then in str(telegram.message(chat.id, panel.message_id)))


async def test_settings_show_a_row_per_default_choice_and_style_group_of_the_catalogue(bot, telegram, alice_chat):
    panel = await reply_to(telegram, alice_chat, ALICE, "/settings")
    rows = {":".join(data.split(":")[:3]) for data in buttons(panel) if data.startswith(("set:df:", "set:st:"))}
    assert rows == catalogue_rows()
    assert {"set:df:upscale", "set:st:art", "set:st:headshot", "set:st:imagine", "set:st:generate"} <= rows
    labels = [button["text"] for row in panel.reply_markup["inline_keyboard"] for button in row]
    assert "By default: Upscale 2×" in labels and "Generate style: FLUX.2 Pro" in labels
    assert "Art effect style: ask" in labels
    # in Russian, from the same catalogue: the menu's label and the operation's title, translated
    panel = await reply_to(telegram, private_chat(IVAN), IVAN, "/settings")
    labels = [button["text"] for row in panel.reply_markup["inline_keyboard"] for button in row]
    assert "По умолчанию: Увеличить 2×" in labels and "Стиль (Арт-эффект): спрашивать" in labels


async def test_changed_defaults_are_stored_and_used_by_the_next_command_without_the_argument(
        bot, telegram, alice_chat, settings):
    panel = await reply_to(telegram, alice_chat, ALICE, "/settings")
    await press(telegram, alice_chat, panel, "set:df:upscale:4", "By default: Upscale 4×")
    await press(telegram, alice_chat, panel, "set:st:art", "Default Art effect style:")
    await press(telegram, alice_chat, panel, "set:st:art:oil", "Art effect style: Oil painting")
    await press(telegram, alice_chat, panel, "set:st:generate", "Default Generate style:")
    choices = [button["callback_data"] for row in telegram.message(alice_chat.id, panel.message_id)["reply_markup"][
        "inline_keyboard"] for button in row]
    assert "set:st:generate:gpt" in choices and "set:st:generate:-" not in choices  # it falls back, never asks
    await press(telegram, alice_chat, panel, "set:st:generate:gpt", "Generate style: GPT Image 2")
    service, engine = people(settings)
    try:
        stored = await service.user_settings(ALICE.id)
    finally:
        await engine.dispose()
    assert stored == {"upscale_default": "4", "style_art": "oil", "style_generate": "gpt"}
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(50, 40), caption="/upscale")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (200, 160)
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(50, 40), caption="/art")
    results = await wait_media(telegram, alice_chat.id, 2)
    assert results[1].caption.startswith("✅ Art: Oil painting")
    telegram.user_sends(alice_chat, ALICE, text="/generate a lighthouse")
    results = await wait_media(telegram, alice_chat.id, 3)
    assert results[2].caption.startswith("✅ Generate (GPT Image 2, 1:1, 1k)")
    # a typed argument still wins over the default
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(50, 40), caption="/upscale 2")
    results = await wait_media(telegram, alice_chat.id, 4)
    assert size_of(results[3].media) == (100, 80)
    assert len(media(telegram, alice_chat.id)) == 4


async def test_a_default_stored_as_a_number_before_is_still_read(bot, telegram, alice_chat, settings):
    service, engine = people(settings)
    try:
        await service.set_user(ALICE.id, upscale_default=4)  # how the hand-made upscale toggle stored it
    finally:
        await engine.dispose()
    panel = await reply_to(telegram, alice_chat, ALICE, "/settings")
    assert "set:df:upscale:2" in buttons(panel)  # it shows 4×, so a press sets 2
    telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(50, 40), caption="/upscale")
    [result] = await wait_media(telegram, alice_chat.id)
    assert size_of(result.media) == (200, 160)
