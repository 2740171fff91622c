"""/settings: a person's defaults in a private chat; a group's settings in a group (its admins only).

The rows come from the catalogue: a default style for every style group of a styled operation, and a
default argument for every operation with `default_choices` (shown with its photo-menu label), so an
operation added to the catalogue shows up here with no edit. Buttons carry ``set:<what>[:<name>[:<value>]]``:
``set:st:<group>[:<style>]``, ``set:df:<operation>:<choice>`` (the choice the press sets), ``set:ack``;
the language button is ``lang:?`` (the language handlers own it). Everything is stored by name in
users.settings or chats.settings (`bot.chats.people` names the keys).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from telegram import CallbackQuery, InlineKeyboardButton, InlineKeyboardMarkup, Message, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler

from bot.chats.people import FOLLOWUPS_EVERYONE, QUICK_ACK, argument_setting, style_setting
from bot.i18n import tr
from bot.operations.catalogue import ArgumentError, Operation
from bot.operations.styles import StyleCatalogue
from bot.tg import texts
from bot.tg.answers import admin_refusal, answer
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext, deps, language_for
from bot.tg.handlers.router import Router
from bot.tg.keyboards import CALLBACK_MAX_BYTES, rows, style_label
from bot.tg.replies import reply

log = logging.getLogger(__name__)

PREFIX = "set"
LANGUAGE_DATA = "lang:?"
STYLE, DEFAULT, ACK = "st", "df", "ack"
#: the "no default style" choice of an operation that asks for a style
NO_STYLE = "-"


def _data(*parts: str) -> str | None:
    data = ":".join((PREFIX, *parts))
    return data if len(data.encode()) <= CALLBACK_MAX_BYTES else None


def _button(text: str, *parts: str) -> InlineKeyboardButton | None:
    data = _data(*parts)
    return None if data is None else InlineKeyboardButton(text, callback_data=data)


def styled(operations: Mapping[str, Operation]) -> dict[str, Operation]:
    """The style groups a person may choose a default for, each with the (first) operation using it."""
    found: dict[str, Operation] = {}
    for operation in operations.values():
        if operation.style_group is not None:
            found.setdefault(operation.style_group, operation)
    return found


def _unchosen_style(lang: str, operation: Operation, styles: StyleCatalogue) -> str:
    """What a styled operation does without a default: its fallback style, or ask with a picker."""
    fallback = styles.group(operation.style_group).get(operation.style_fallback or "")
    return style_label(lang, fallback) if fallback is not None else tr(lang, texts.SETTINGS_STYLE_ASK)


def current_choice(operation: Operation, settings: Mapping[str, Any]) -> str | None:
    """The default choice in force: the person's, else the one the operation's own default equals (None: none does)."""
    stored = str(settings.get(argument_setting(operation.name), ""))
    if stored in operation.default_choices:
        return stored
    try:
        usual = operation.parse("")
    except ArgumentError:
        return None
    return next((choice for choice in operation.default_choices if _parsed(operation, choice) == usual), None)


def _parsed(operation: Operation, text: str) -> dict[str, Any] | None:
    try:
        return operation.parse(text)
    except ArgumentError:
        return None


def choice_label(lang: str, operation: Operation, choice: str | None) -> str:
    """A default choice as a person sees it: its photo-menu label, else the title and the argument text."""
    if choice is None:
        return "—"
    label = operation.choice_label(choice)
    return tr(lang, label) if label else tr(lang, texts.SETTINGS_CHOICE_TYPED, title=tr(lang, operation.title),
                                            argument=choice)


def _default_row(lang: str, operation: Operation, settings: Mapping[str, Any]) -> InlineKeyboardButton | None:
    choices = operation.default_choices
    current = current_choice(operation, settings)
    following = choices[(choices.index(current) + 1) % len(choices)] if current in choices else choices[0]
    return _button(tr(lang, texts.SETTINGS_DEFAULT_CHOICE, choice=choice_label(lang, operation, current)),
                   DEFAULT, operation.name, following)


def _style_row(lang: str, group: str, operation: Operation, settings: Mapping[str, Any],
               styles: StyleCatalogue) -> InlineKeyboardButton | None:
    chosen = styles.group(group).get(str(settings.get(style_setting(group)) or ""))
    style = style_label(lang, chosen) if chosen is not None else _unchosen_style(lang, operation, styles)
    return _button(tr(lang, texts.SETTINGS_STYLE, group=tr(lang, operation.title), style=style), STYLE, group)


def user_panel(lang: str, settings: Mapping[str, Any], operations: Mapping[str, Operation],
               styles: StyleCatalogue) -> InlineKeyboardMarkup:
    """A person's settings as buttons: language, a row per operation with default choices and per style group,
    and how quick jobs are acknowledged."""
    rows = [[InlineKeyboardButton(tr(lang, texts.SETTINGS_LANGUAGE), callback_data=LANGUAGE_DATA)]]
    buttons = [_default_row(lang, operation, settings) for operation in operations.values() if operation.default_choices]
    buttons += [_style_row(lang, group, operation, settings, styles) for group, operation in styled(operations).items()]
    quick = texts.SETTINGS_QUICK_STATUS if settings.get(QUICK_ACK) == "status" else texts.SETTINGS_QUICK_REACTION
    buttons.append(_button(tr(lang, quick), ACK))
    rows += [[button] for button in buttons if button is not None]
    return InlineKeyboardMarkup(rows)


def group_panel(lang: str, settings: dict[str, Any]) -> InlineKeyboardMarkup:
    """A group's settings as buttons."""
    followups = (texts.SETTINGS_FOLLOWUPS_EVERYONE if settings.get(FOLLOWUPS_EVERYONE)
                 else texts.SETTINGS_FOLLOWUPS_OWNER)
    return InlineKeyboardMarkup([[InlineKeyboardButton(tr(lang, texts.SETTINGS_LANGUAGE), callback_data=LANGUAGE_DATA)],
                                 [_button(tr(lang, followups), "followups")]])


def style_choices(lang: str, group: str, operation: Operation, styles: StyleCatalogue) -> InlineKeyboardMarkup:
    """The styles of a group to pick a default from, and "ask" (the picker each time) where the operation asks."""
    buttons = [_button(style_label(lang, style), STYLE, group, style.key) for style in styles.group(group).styles.values()]
    if operation.style_fallback is None:
        buttons.append(_button(tr(lang, texts.SETTINGS_STYLE_ASK), STYLE, group, NO_STYLE))
    fitting = [button for button in buttons if button is not None]
    return InlineKeyboardMarkup(rows(fitting, 2))


async def refusal_for_group(context: CustomContext, chat_id: int, user_id: int, lang: str) -> str | None:
    """Why this user may not change the group's settings, or None if they may (failing closed)."""
    refusal = await admin_refusal(context, chat_id, user_id, None, not_admin=texts.SETTINGS_ADMINS_ONLY,
                                  check_failed=texts.SETTINGS_CHECK_FAILED)
    return None if refusal is None else tr(lang, refusal)


async def show_settings(update: Update, context: CustomContext, call: CommandCall) -> None:
    """Show the settings that apply here: the caller's in private, the group's (to its admins) in groups."""
    message, d = update.effective_message, deps(context)
    user = message.from_user
    lang = await language_for(context, update=update)
    if user is None:
        return
    if message.chat.type == ChatType.PRIVATE:
        settings = await d.people.user_settings(user.id)
        await reply(message, tr(lang, texts.SETTINGS_TITLE), user_panel(lang, settings, d.operations, d.styles))
        return
    refusal = await refusal_for_group(context, message.chat_id, user.id, lang)
    if refusal is not None:
        await reply(message, refusal)
        return
    settings = await d.people.chat_settings(message.chat_id)
    await reply(message, tr(lang, texts.SETTINGS_GROUP_TITLE), group_panel(lang, settings))


async def on_settings_button(update: Update, context: CustomContext) -> None:
    """A button of a settings panel."""
    query = update.callback_query
    lang = await language_for(context, update=update)
    panel = query.message if isinstance(query.message, Message) else None
    parts = (query.data or "").split(":", 3)
    if panel is None or len(parts) < 2:
        await answer(query)
        return
    if panel.chat.type != ChatType.PRIVATE:
        await _group_button(context, query, panel, parts[1:], lang)
    else:
        await _user_button(context, query, panel, parts[1:], lang)


async def _user_button(context: CustomContext, query: CallbackQuery, panel: Message, parts: list[str],
                       lang: str) -> None:
    d, user_id = deps(context), query.from_user.id
    settings = await d.people.user_settings(user_id)
    what, name, value = [*parts, "", ""][:3]
    operation = d.operations.get(name)
    groups = styled(d.operations)
    changed: dict[str, Any] = {}
    if what == DEFAULT and operation is not None and value in operation.default_choices:
        changed[argument_setting(operation.name)] = value
    elif what == ACK:
        changed[QUICK_ACK] = "reaction" if settings.get(QUICK_ACK) == "status" else "status"
    elif what == STYLE and name in groups and len(parts) == 2:
        await answer(query)
        await _edit(panel, tr(lang, texts.SETTINGS_PICK_STYLE, group=tr(lang, groups[name].title)),
                    style_choices(lang, name, groups[name], d.styles))
        return
    elif what == STYLE and name in groups and len(parts) == 3:
        style = d.styles.group(name).get(value)
        changed[style_setting(name)] = style.key if style is not None else None
    if changed:
        settings = await d.people.set_user(user_id, **changed)
    await answer(query, tr(lang, texts.SETTINGS_SAVED) if changed else None)
    await _edit(panel, tr(lang, texts.SETTINGS_TITLE), user_panel(lang, settings, d.operations, d.styles))


async def _group_button(context: CustomContext, query: CallbackQuery, panel: Message, parts: list[str],
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


def register(application: Application, router: Router) -> None:
    """/settings and its panel's buttons."""
    router.add("settings", show_settings, texts.SETTINGS_COMMAND)
    application.add_handler(CallbackQueryHandler(on_settings_button, pattern=rf"^{PREFIX}:"))
