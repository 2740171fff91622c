"""/language: the language the bot speaks to a person (in private) or in a group (chosen by its admins).

Its buttons' callback data: "lang:?" opens the picker (the /settings menu has such a button), and
"lang:<code>" chooses ("lang:auto": a person's Telegram app, a group's each member's own).
"""

from __future__ import annotations

import logging

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler

from bot.i18n import LANGUAGE_NAMES, LANGUAGES, tr
from bot.tg import texts
from bot.tg.answers import admin_refusal
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext, deps, forget_languages, language_for
from bot.tg.handlers.router import Router
from bot.tg.keyboards import rows
from bot.tg.replies import reply

log = logging.getLogger(__name__)

PREFIX = "lang"
OPEN = f"{PREFIX}:?"
AUTOMATIC = "auto"
#: the callback data this module answers (for the application's CallbackQueryHandler)
PATTERN = rf"^{PREFIX}:"


def picker(language: str, *, group: bool) -> InlineKeyboardMarkup:
    """A button per language (in its own name), and one to follow each person's Telegram app."""
    buttons = [InlineKeyboardButton(LANGUAGE_NAMES[code], callback_data=f"{PREFIX}:{code}") for code in LANGUAGES]
    laid = rows(buttons, 2)
    automatic = texts.LANGUAGE_AUTOMATIC_GROUP if group else texts.LANGUAGE_AUTOMATIC
    laid.append([InlineKeyboardButton(tr(language, automatic), callback_data=f"{PREFIX}:{AUTOMATIC}")])
    return InlineKeyboardMarkup(laid)


def changed_keyboard(language: str) -> InlineKeyboardMarkup:
    """The one button left under a chosen language: change it again."""
    return InlineKeyboardMarkup([[InlineKeyboardButton(tr(language, texts.LANGUAGE_CHANGE), callback_data=OPEN)]])


def _prompt(language: str, *, group: bool) -> str:
    return tr(language, texts.LANGUAGE_PROMPT_GROUP if group else texts.LANGUAGE_PROMPT)


async def show_picker(update: Update, context: CustomContext, call: CommandCall) -> None:
    """Offer the languages (in a group, for the group: only its admins' presses count)."""
    message = update.effective_message
    group = message.chat.type != ChatType.PRIVATE
    language = await language_for(context, update=update)
    await reply(message, _prompt(language, group=group), picker(language, group=group))


async def on_button(update: Update, context: CustomContext) -> None:
    """"lang:?" opens the picker; "lang:<code>" chooses (in a group, only an admin may)."""
    query = update.callback_query
    menu = query.message if isinstance(query.message, Message) else None
    language = await language_for(context, update=update)
    choice = (query.data or "").removeprefix(f"{PREFIX}:")
    if menu is None or (choice not in LANGUAGES and choice not in (AUTOMATIC, "?")):
        await _answer(query, tr(language, texts.MENU_EXPIRED))
        return
    group = menu.chat.type != ChatType.PRIVATE
    # in a group only its admins may use these buttons: anyone else's press posts and changes nothing
    refusal = await admin_refusal(context, menu.chat_id, query.from_user.id, None, not_admin=texts.LANGUAGE_ADMINS_ONLY,
                                  check_failed=texts.LANGUAGE_CHECK_FAILED) if group else None
    if refusal is not None:
        await _answer(query, tr(language, refusal))
        return
    if choice == "?":
        await _answer(query)
        await context.bot.send_message(menu.chat_id, _prompt(language, group=group),
                                       reply_markup=picker(language, group=group))
        return
    chosen = None if choice == AUTOMATIC else choice
    choices = deps(context).languages
    if choices is None:
        await _answer(query, tr(language, texts.MENU_EXPIRED))
        return
    if group:
        await choices.choose_for_chat(menu.chat_id, type=menu.chat.type, title=menu.chat.title, language=chosen)
    else:
        await choices.choose_for_user(query.from_user.id, chosen)
    forget_languages(context)
    language = await language_for(context, update=update)
    done = {(False, False): texts.LANGUAGE_CHOSEN, (True, False): texts.LANGUAGE_CHOSEN_GROUP,
            (False, True): texts.LANGUAGE_AUTOMATIC_CHOSEN, (True, True): texts.LANGUAGE_AUTOMATIC_CHOSEN_GROUP}
    await _answer(query)
    try:
        await menu.edit_text(tr(language, done[group, chosen is None]), reply_markup=changed_keyboard(language))
    except TelegramError as error:
        log.debug("could not edit the language picker: %s", error)


async def _answer(query, text: str | None = None) -> None:
    try:
        await query.answer(text, show_alert=text is not None)
    except TelegramError:  # too old to answer: nothing worse for the user
        return


def register(application: Application, router: Router) -> None:
    """/language and its picker's buttons."""
    router.add("language", show_picker, texts.LANGUAGE_COMMAND)
    application.add_handler(CallbackQueryHandler(on_button, pattern=PATTERN))
