"""/settings: a person's defaults in a private chat; a group's settings in a group (its admins only).

Buttons carry ``set:<what>[:<group>[:<value>]]``; the language button is ``lang:?`` (the language
handlers own it). Everything is stored by name in users.settings or chats.settings.
"""

from __future__ import annotations

import logging
from typing import Any

from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler, ContextTypes

from bot.i18n import tr
from bot.jobs.people import FOLLOWUPS_EVERYONE, QUICK_ACK, UPSCALE_FACTOR, style_setting
from bot.tg import texts
from bot.tg.commands import CommandCall
from bot.tg.context import deps, language_for
from bot.tg.flow import reply
from bot.tg.handlers.followups import answer
from bot.tg.handlers.jobs import admin_refusal
from bot.tg.handlers.router import Router

log = logging.getLogger(__name__)

PREFIX = "set"
LANGUAGE_DATA = "lang:?"
#: the style groups a person can set a default for
STYLE_GROUPS = ("art", "headshot", "imagine")


def _button(text: str, *parts: str) -> InlineKeyboardButton:
    return InlineKeyboardButton(text, callback_data=":".join((PREFIX, *parts)))


def user_panel(lang: str, settings: dict[str, Any], styles) -> InlineKeyboardMarkup:
    """A person's settings as buttons."""
    rows = [[InlineKeyboardButton(tr(lang, texts.SETTINGS_LANGUAGE), callback_data=LANGUAGE_DATA)],
            [_button(tr(lang, texts.SETTINGS_UPSCALE, factor=settings.get(UPSCALE_FACTOR, 2)), "up")]]
    for group in STYLE_GROUPS:
        chosen = settings.get(style_setting(group))
        label = styles.group(group).get(chosen).label if chosen and styles.group(group).get(chosen) else None
        rows.append([_button(tr(lang, texts.SETTINGS_STYLE, group=group.capitalize(),
                                style=label or tr(lang, texts.SETTINGS_STYLE_ASK)), "st", group)])
    quick = texts.SETTINGS_QUICK_STATUS if settings.get(QUICK_ACK) == "status" else texts.SETTINGS_QUICK_REACTION
    rows.append([_button(tr(lang, quick), "ack")])
    return InlineKeyboardMarkup(rows)


def group_panel(lang: str, settings: dict[str, Any]) -> InlineKeyboardMarkup:
    """A group's settings as buttons."""
    followups = (texts.SETTINGS_FOLLOWUPS_EVERYONE if settings.get(FOLLOWUPS_EVERYONE)
                 else texts.SETTINGS_FOLLOWUPS_OWNER)
    return InlineKeyboardMarkup([[InlineKeyboardButton(tr(lang, texts.SETTINGS_LANGUAGE), callback_data=LANGUAGE_DATA)],
                                 [_button(tr(lang, followups), "followups")]])


def style_choices(lang: str, group: str, styles) -> InlineKeyboardMarkup:
    """The styles of a group to pick a default from, and "ask" (the picker each time)."""
    buttons = [_button(style.label, "st", group, style.key) for style in styles.group(group).styles.values()]
    buttons.append(_button(tr(lang, texts.SETTINGS_STYLE_ASK), "st", group, "-"))
    return InlineKeyboardMarkup([buttons[i:i + 2] for i in range(0, len(buttons), 2)])


async def refusal_for_group(context: ContextTypes.DEFAULT_TYPE, chat_id: int, user_id: int, lang: str) -> str | None:
    """Why this user may not change the group's settings, or None if they may (failing closed)."""
    refusal = await admin_refusal(context, chat_id, user_id, None, not_admin=texts.SETTINGS_ADMINS_ONLY,
                                  check_failed=texts.SETTINGS_CHECK_FAILED)
    return None if refusal is None else tr(lang, refusal)


async def show_settings(update: Update, context: ContextTypes.DEFAULT_TYPE, call: CommandCall) -> None:
    """Show the settings that apply here: the caller's in private, the group's (to its admins) in groups."""
    message, d = update.effective_message, deps(context)
    user = message.from_user
    lang = await language_for(context, update=update)
    if d.people is None or user is None:
        return
    if message.chat.type == ChatType.PRIVATE:
        settings = await d.people.user_settings(user.id)
        await reply(message, tr(lang, texts.SETTINGS_TITLE), user_panel(lang, settings, d.styles))
        return
    refusal = await refusal_for_group(context, message.chat_id, user.id, lang)
    if refusal is not None:
        await reply(message, refusal)
        return
    settings = await d.people.chat_settings(message.chat_id)
    await reply(message, tr(lang, texts.SETTINGS_GROUP_TITLE), group_panel(lang, settings))


async def on_settings_button(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A button of a settings panel."""
    query, d = update.callback_query, deps(context)
    lang = await language_for(context, update=update)
    panel = query.message if isinstance(query.message, Message) else None
    parts = (query.data or "").split(":")
    if panel is None or d.people is None or len(parts) < 2:
        await answer(query)
        return
    if panel.chat.type != ChatType.PRIVATE:
        await _group_button(context, query, panel, parts[1:], lang)
    else:
        await _user_button(context, query, panel, parts[1:], lang)


async def _user_button(context: ContextTypes.DEFAULT_TYPE, query: CallbackQuery, panel: Message, parts: list[str],
                       lang: str) -> None:
    d, user_id = deps(context), query.from_user.id
    settings = await d.people.user_settings(user_id)
    what = parts[0]
    if what == "up":
        settings = await d.people.set_user(user_id, **{UPSCALE_FACTOR: 4 if settings.get(UPSCALE_FACTOR, 2) == 2 else 2})
    elif what == "ack":
        settings = await d.people.set_user(user_id, **{QUICK_ACK: "reaction" if settings.get(QUICK_ACK) == "status"
                                                       else "status"})
    elif what == "st" and len(parts) == 2 and parts[1] in STYLE_GROUPS:
        await answer(query)
        await _edit(panel, tr(lang, texts.SETTINGS_PICK_STYLE, group=parts[1]), style_choices(lang, parts[1], d.styles))
        return
    elif what == "st" and len(parts) == 3 and parts[1] in STYLE_GROUPS:
        key = parts[2] if d.styles.group(parts[1]).get(parts[2]) else None
        settings = await d.people.set_user(user_id, **{style_setting(parts[1]): key})
    await answer(query, tr(lang, texts.SETTINGS_SAVED))
    await _edit(panel, tr(lang, texts.SETTINGS_TITLE), user_panel(lang, settings, d.styles))


async def _group_button(context: ContextTypes.DEFAULT_TYPE, query: CallbackQuery, panel: Message, parts: list[str],
                        lang: str) -> None:
    d = deps(context)
    refusal = await refusal_for_group(context, panel.chat_id, query.from_user.id, lang)
    if refusal is not None:
        await answer(query, refusal, alert=True)
        return
    settings = await d.people.chat_settings(panel.chat_id)
    if parts[0] == "followups":
        settings = await d.people.set_chat(panel.chat_id, type=panel.chat.type, title=panel.chat.title,
                                           **{FOLLOWUPS_EVERYONE: not settings.get(FOLLOWUPS_EVERYONE)})
    await answer(query, tr(lang, texts.SETTINGS_SAVED))
    await _edit(panel, tr(lang, texts.SETTINGS_GROUP_TITLE), group_panel(lang, settings))


async def _edit(panel: Message, text: str, markup: InlineKeyboardMarkup) -> None:
    try:
        await panel.edit_text(text, reply_markup=markup)
    except TelegramError as error:  # unchanged, or too old: the setting is saved either way
        log.debug("settings panel not edited: %s", error)


def register(router: Router, application: Application) -> None:
    router.add("settings", show_settings, texts.SETTINGS_COMMAND)
    application.add_handler(CallbackQueryHandler(on_settings_button, pattern=rf"^{PREFIX}:"))
