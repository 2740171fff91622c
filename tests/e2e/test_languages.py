"""Languages end to end: a Russian and an Arabic user get their language in replies, buttons and captions;
/language changes it for good; a group's admins choose the group's; menus are registered per language and scope."""

from __future__ import annotations

import re

from bot.i18n import FSI, LRI, PDI, RLM, tr
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import texts, wait_media, wait_text
from tests.fakes import samples
from tests.fakes.telegram_models import User, private_chat

IVAN = User(2001, "Иван", username="ivan", language_code="ru")
LAYLA = User(2002, "ليلى", username="layla", language_code="ar")
CAROL = User(2003, "Carol", username="carol", language_code="en")


#: an English month's name or abbreviation, as strftime's %b wrote them into /history
ENGLISH_MONTH = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\b")


def _plain(text: str) -> str:
    return re.sub(f"[{FSI}{LRI}{PDI}{RLM}]", "", text)


def _buttons(message) -> list[str]:
    return [button["text"] for row in message.reply_markup["inline_keyboard"] for button in row]


async def _photo_menu_and_result(telegram, user: User, language: str) -> str:
    chat = private_chat(user)
    telegram.user_sends(chat, user, photo=samples.jpeg(160, 120))
    prompt = tr(language, bot_texts.MENU_PROMPT)
    await wait_text(telegram, chat.id, prompt)
    menu = next(m for m in telegram.sent(chat.id) if m.text == prompt)
    assert tr(language, "Upscale 2×") in _buttons(menu) and "Upscale 2×" not in _buttons(menu)
    telegram.user_presses(chat, user, menu.message_id, "op:upscale:2")
    [result] = await wait_media(telegram, chat.id)
    assert _plain(result.caption).startswith("✅ " + _plain(tr(language, "Upscale ×{factor}", factor=2)))
    # the buttons under the result speak the language too, the next operations' as much as "again"
    under_result = _buttons(result)
    for label in (bot_texts.FU_AGAIN, "Upscale 2×", "Skin retouch", "Remove background", "Colorize", "Restore"):
        assert tr(language, label) in under_result and label not in under_result, label

    telegram.user_sends(chat, user, text="/art", reply_to=menu.reply_to_message_id)
    picker_prompt = tr(language, bot_texts.STYLE_PROMPT)
    await wait_text(telegram, chat.id, picker_prompt)
    telegram.user_sends(chat, user, text="/upscale 3")
    return await wait_text(telegram, chat.id, _plain(tr(language, "The upscale factor must be 2 or 4, for example /upscale 2"))[:20])


async def test_a_russian_user_gets_russian_menus_buttons_captions_and_errors(bot, telegram):
    error = await _photo_menu_and_result(telegram, IVAN, "ru")
    assert error.startswith("Увеличить можно только в 2 или 4 раза") and "Как писать: /upscale [2|4]" in error


async def test_an_arabic_user_gets_arabic_with_commands_and_numbers_isolated(bot, telegram):
    error = await _photo_menu_and_result(telegram, LAYLA, "ar")
    assert _plain(error).startswith("يجب أن يكون معامل التكبير")
    assert f"{LRI}/upscale 2{PDI}" in error and f"{LRI}/upscale [2|4]{PDI}" in error


async def _styled_results_and_history(telegram, user: User, language: str) -> str:
    """A styled art result and a headshot album, then /history: the styles by their translated names, the
    dates in the language's own words, never a style's id nor an English month."""
    chat = private_chat(user)
    telegram.user_sends(chat, user, photo=samples.jpeg(400, 400), caption="/art watercolor")
    [art] = await wait_media(telegram, chat.id)
    telegram.user_sends(chat, user, photo=samples.jpeg(400, 400), caption="/headshot business 2")
    headshots = (await wait_media(telegram, chat.id, 3))[1:]
    captions = [_plain(art.caption), _plain(next(m.caption for m in headshots if m.caption))]
    assert captions[0].startswith("✅ " + _plain(tr(language, "Art")))
    assert tr(language, "Watercolor") in captions[0] and tr(language, "Business") in captions[1]
    telegram.user_sends(chat, user, text="/history")
    history = _plain(await wait_text(telegram, chat.id, tr(language, bot_texts.HISTORY_TITLE)))
    assert tr(language, "Watercolor") in history and tr(language, "Business") in history
    for text in [*captions, history]:
        assert not re.search(r"watercolor|business", text, re.IGNORECASE), text
        assert not ENGLISH_MONTH.search(text), text
    return history


async def test_a_russian_users_styled_captions_and_history_say_no_style_id_nor_english_month(bot, telegram):
    history = await _styled_results_and_history(telegram, IVAN, "ru")
    assert "UTC" in history


async def test_an_arabic_users_styled_captions_and_history_say_no_style_id_nor_english_month(bot, telegram):
    history = await _styled_results_and_history(telegram, LAYLA, "ar")
    assert "التوقيت العالمي" in history  # the time zone, said in Arabic


async def test_language_is_chosen_with_buttons_and_sticks(bot, telegram):
    chat = private_chat(IVAN)
    telegram.user_sends(chat, IVAN, text="/language")
    await wait_text(telegram, chat.id, "Выберите язык:")
    picker = next(m for m in telegram.sent(chat.id) if m.text == "Выберите язык:")
    assert {"English", "Русский", "Español", "Português", "Bahasa Indonesia", "العربية"} <= set(_buttons(picker))
    telegram.user_presses(chat, IVAN, picker.message_id, "lang:es")
    await telegram.wait_for(lambda: telegram.message(chat.id, picker.message_id)["text"] == "Listo: te hablaré en español.")
    for _ in range(2):  # the choice is stored, not remembered for one message
        telegram.user_sends(chat, IVAN, text="hola")
    await telegram.wait_for(lambda: texts(telegram, chat.id).count(tr("es", bot_texts.TEXT_HINT)) == 2)
    # "lang:?" (the /settings button) opens the picker again; "auto" goes back to the app's language
    telegram.user_presses(chat, IVAN, picker.message_id, "lang:?")
    await wait_text(telegram, chat.id, "Elige el idioma:")
    again = next(m for m in telegram.sent(chat.id) if m.text == "Elige el idioma:")
    telegram.user_presses(chat, IVAN, again.message_id, "lang:auto")
    await wait_text(telegram, chat.id, "Готово: буду следовать языку вашего Telegram.")


async def test_a_group_admin_sets_the_group_language_and_a_member_may_not(bot, telegram, group_chat):
    telegram.members.make_admin(group_chat, CAROL)
    telegram.members.join(group_chat, IVAN)
    telegram.user_sends(group_chat, IVAN, text="/language@aiart_test_bot")
    await wait_text(telegram, group_chat.id, "Выберите язык этой группы")
    picker = next(m for m in telegram.sent(group_chat.id) if m.reply_markup)
    press = telegram.user_presses(group_chat, IVAN, picker.message_id, "lang:pt")
    await telegram.wait_for(lambda: press in telegram.callback_answers)
    assert telegram.callback_answers[press]["text"] == "Язык группы могут выбрать только её админы."
    assert telegram.callback_answers[press]["show_alert"] is True
    telegram.user_sends(group_chat, IVAN, text="/status@aiart_test_bot")
    await wait_text(telegram, group_chat.id, "У вас нет задач")

    telegram.user_presses(group_chat, CAROL, picker.message_id, "lang:pt")
    await wait_text(telegram, group_chat.id, "Pronto: vou falar em português neste grupo.")
    for user in (IVAN, CAROL):  # the group's language, whatever each person's app speaks
        telegram.user_sends(group_chat, user, text="/status@aiart_test_bot")
    await telegram.wait_for(
        lambda: texts(telegram, group_chat.id).count("Você não tem tarefas em andamento nesta conversa.") == 2)


async def test_an_arabic_job_result_caption_is_arabic_and_an_english_one_english(bot, telegram, alice_chat):
    chat = private_chat(LAYLA)
    telegram.user_sends(chat, LAYLA, caption="/upscale 2", photo=samples.jpeg(80, 60))
    telegram.user_sends(alice_chat, ALICE, caption="/upscale 2", photo=samples.jpeg(80, 60))
    [arabic] = await wait_media(telegram, chat.id)
    [english] = await wait_media(telegram, alice_chat.id)
    assert _plain(arabic.caption).startswith("✅ تكبير ×2")
    assert english.caption.startswith("✅ Upscale ×2")


async def test_menus_and_descriptions_are_registered_per_language_and_scope(bot, telegram):
    private, groups = {"type": "all_private_chats"}, {"type": "all_group_chats"}
    admin = {"type": "chat", "chat_id": ALICE.id}  # the e2e settings make Alice a bot admin
    for scope in (private, groups, admin):
        english = {c["command"]: c["description"] for c in telegram.my_commands(scope)}
        russian = {c["command"]: c["description"] for c in telegram.my_commands(scope, "ru")}
        arabic = {c["command"]: c["description"] for c in telegram.my_commands(scope, "ar")}
        assert english["language"] == "Choose the language" and russian["language"] == "Выбрать язык"
        assert russian["upscale"] == "Увеличить фото в 2 или 4 раза" and arabic["help"].startswith("ما أستطيع فعله")
        assert english.keys() == russian.keys() == arabic.keys()
        assert "balance" in english  # everyone has credits to look at
        assert ("refund" in english) == (scope is admin)
    for code in ("es", "pt", "id"):
        assert telegram.my_commands(private, code) and telegram.my_commands(groups, code)
    assert telegram.profile.descriptions[""].startswith("I edit photos with AI")
    assert telegram.profile.descriptions["ru"].startswith("Я редактирую фото")
    assert telegram.profile.short_descriptions["ar"] == "تعديل الصور بالذكاء الاصطناعي: أرسل صورة واختر ما تريد."
    assert set(telegram.profile.short_descriptions) == {"", "ru", "es", "pt", "id", "ar"}


async def test_a_members_press_on_an_admins_settings_panel_is_refused_with_an_alert_and_posts_nothing(
        bot, telegram, group_chat):
    telegram.members.make_admin(group_chat, CAROL)
    telegram.members.join(group_chat, IVAN)
    telegram.user_sends(group_chat, CAROL, text="/settings@aiart_test_bot")
    await wait_text(telegram, group_chat.id, tr("en", bot_texts.SETTINGS_GROUP_TITLE))
    panel = next(m for m in telegram.sent(group_chat.id) if m.reply_markup)
    sent_before = len(telegram.sent(group_chat.id))
    for data in ("lang:?", "set:followups"):
        press = telegram.user_presses(group_chat, IVAN, panel.message_id, data)
        await telegram.wait_for(lambda press=press: press in telegram.callback_answers)
        answer = telegram.callback_answers[press]
        assert answer["show_alert"] is True, data
        assert answer["text"] in (tr("ru", bot_texts.LANGUAGE_ADMINS_ONLY), tr("ru", bot_texts.SETTINGS_ADMINS_ONLY))
    # the admin's own press still opens the picker: so nothing was posted above because the member was refused
    press = telegram.user_presses(group_chat, CAROL, panel.message_id, "lang:?")
    await telegram.wait_for(lambda: press in telegram.callback_answers)
    await wait_text(telegram, group_chat.id, tr("en", bot_texts.LANGUAGE_PROMPT_GROUP))
    assert len(telegram.sent(group_chat.id)) == sent_before + 1
    assert telegram.message(group_chat.id, panel.message_id)["reply_markup"] == panel.reply_markup
