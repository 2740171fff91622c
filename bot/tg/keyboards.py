"""Inline keyboards and their callback data (always under Telegram's 64-byte limit)."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.credits.packs import Pack
from bot.credits.texts import pack_button
from bot.i18n import N_, Text, render, tr
from bot.operations.catalogue import Operation
from bot.operations.styles import Style, StyleGroup

MENU_PREFIX = "op"
STYLE_PREFIX = "st"
#: a picked argument (a catalogue `Pick`): the button carries the whole argument text
PICK_PREFIX = "ar"
CALLBACK_MAX_BYTES = 64
#: `/start inline`, the deep link of the "open the bot" buttons (inline and guest answers)
START_PARAMETER = "inline"
OPEN_BOT = N_("Open the bot")


@dataclass(frozen=True)
class Choice:
    """A pressed button: an operation (from the photo menu), a style or a picked argument, with its argument text."""

    kind: str          # MENU_PREFIX, STYLE_PREFIX or PICK_PREFIX
    operation: str
    argument: str = ""


def parse_choice(data: str | None) -> Choice | None:
    """Decode callback data; None for anything this bot did not make (old or foreign keyboards)."""
    if not data or len(data.encode()) > CALLBACK_MAX_BYTES:
        return None
    parts = data.split(":", 2)
    if len(parts) < 2 or parts[0] not in (MENU_PREFIX, STYLE_PREFIX, PICK_PREFIX) or not parts[1]:
        return None
    return Choice(parts[0], parts[1], parts[2] if len(parts) == 3 else "")


def _data(kind: str, operation: str, argument: str = "") -> str:
    data = f"{kind}:{operation}:{argument}" if argument else f"{kind}:{operation}"
    assert len(data.encode()) <= CALLBACK_MAX_BYTES, data  # catalogue names are short; a long one is a bug
    return data


#: the most characters a label may show in a row of n buttons on a phone's screen before Telegram cuts it off
MOST_CHARS = {1: 40, 2: 20, 3: 13, 4: 9, 5: 7}


def visible_length(label: str) -> int:
    """How many characters a label shows (direction isolates, joiners and combining marks take no room)."""
    return sum(1 for char in label if unicodedata.category(char) not in ("Cf", "Mn"))


def rows(buttons: Sequence[InlineKeyboardButton], most: int) -> list[list[InlineKeyboardButton]]:
    """The buttons in order, up to `most` a row, but fewer where a label would not fit the narrower buttons."""
    laid: list[list[InlineKeyboardButton]] = []
    for button in buttons:
        row = laid[-1] + [button] if laid else []
        if row and len(row) <= most and all(visible_length(b.text) <= MOST_CHARS[len(row)] for b in row):
            laid[-1] = row
        else:
            laid.append([button])
    return laid


def style_label(language: str, style: Style) -> str:
    """A style's label in `language` (the shipped ones are translated; an operator's own shows as written)."""
    return tr(language, style.label)


def operations_menu(operations: Mapping[str, Operation], language: str) -> InlineKeyboardMarkup:
    """The menu shown under a photo sent without a command: each operation's buttons from its catalogue entry."""
    buttons = [InlineKeyboardButton(tr(language, button.label), callback_data=_data(MENU_PREFIX, operation.name, button.argument))
               for operation in operations.values() for button in operation.menu_buttons]
    return InlineKeyboardMarkup(rows(buttons, 2))


def style_picker(language: str, operation: str, group: StyleGroup) -> InlineKeyboardMarkup:
    """Buttons for the styles of one operation."""
    buttons = [InlineKeyboardButton(style_label(language, style), callback_data=_data(STYLE_PREFIX, operation, style.key))
               for style in group.styles.values()]
    return InlineKeyboardMarkup(rows(buttons, 2))


def argument_keyboard(language: str, kind: str, operation: Operation,
                      offered: Sequence[tuple[Text | str, str]], per_row: int = 3) -> InlineKeyboardMarkup | None:
    """(label, argument text) pairs as buttons of `kind`, up to `per_row` a row, leaving out any whose data would be
    too long; None when none are left."""
    buttons = [InlineKeyboardButton(render(language, label), callback_data=data) for label, argument in offered
               if len((data := f"{kind}:{operation.name}:{argument}").encode()) <= CALLBACK_MAX_BYTES]
    return InlineKeyboardMarkup(rows(buttons, per_row)) if buttons else None


#: a pack button's callback data: buy:<credits>:<stars>
BUY_PREFIX = "buy:"


def packs_keyboard(language: str, packs: tuple[Pack, ...]) -> InlineKeyboardMarkup:
    """One button per pack; its callback data names the pack by its contents (a changed price is a new pack)."""
    return InlineKeyboardMarkup([[InlineKeyboardButton(
        pack_button(language, pack.credits, pack.stars),
        callback_data=f"{BUY_PREFIX}{pack.credits}:{pack.stars}")] for pack in packs])


def open_bot_url(username: str | None) -> str:
    """The t.me deep link that opens the bot's chat (`/start inline`)."""
    return f"https://t.me/{username}?start={START_PARAMETER}"


def open_bot_keyboard(language: str, username: str | None) -> InlineKeyboardMarkup:
    """One button that opens the bot's chat."""
    return InlineKeyboardMarkup([[InlineKeyboardButton(tr(language, OPEN_BOT), url=open_bot_url(username))]])
