"""Inline keyboards and their callback data (always under Telegram's 64-byte limit)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.i18n import Text, render, tr
from bot.operations.catalogue import Operation
from bot.operations.styles import StyleGroup

MENU_PREFIX = "op"
STYLE_PREFIX = "st"
#: a picked argument (a catalogue `Pick`): the button carries the whole argument text
PICK_PREFIX = "ar"
CALLBACK_MAX_BYTES = 64


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


def _rows(buttons: list[InlineKeyboardButton], width: int) -> list[list[InlineKeyboardButton]]:
    return [buttons[i:i + width] for i in range(0, len(buttons), width)]


def operations_menu(operations: Mapping[str, Operation], language: str) -> InlineKeyboardMarkup:
    """The menu shown under a photo sent without a command: each operation's buttons from its catalogue entry."""
    buttons = [InlineKeyboardButton(tr(language, button.label), callback_data=_data(MENU_PREFIX, operation.name, button.argument))
               for operation in operations.values() for button in operation.menu_buttons]
    return InlineKeyboardMarkup(_rows(buttons, 2))


def style_picker(operation: str, group: StyleGroup) -> InlineKeyboardMarkup:
    """Buttons for the styles of one operation."""
    buttons = [InlineKeyboardButton(style.label, callback_data=_data(STYLE_PREFIX, operation, style.key))
               for style in group.styles.values()]
    return InlineKeyboardMarkup(_rows(buttons, 2))


def argument_keyboard(language: str, kind: str, operation: Operation,
                      offered: Sequence[tuple[Text | str, str]]) -> InlineKeyboardMarkup | None:
    """(label, argument text) pairs as buttons of `kind`, three a row, leaving out any whose data would be too
    long; None when none are left."""
    buttons = [InlineKeyboardButton(render(language, label), callback_data=data) for label, argument in offered
               if len((data := f"{kind}:{operation.name}:{argument}").encode()) <= CALLBACK_MAX_BYTES]
    return InlineKeyboardMarkup(_rows(buttons, 3)) if buttons else None
