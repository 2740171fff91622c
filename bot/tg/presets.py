"""Arguments a person would rather pick than type: an operation's presets for a photo, as buttons."""

from __future__ import annotations

from telegram import InlineKeyboardMarkup, Message

from bot.operations.catalogue import Operation
from bot.tg import keyboards


def photo_size(message: Message | None) -> tuple[int, int] | None:
    """The width and height of the photo a message carries or replies to (None for documents: Telegram gives no size)."""
    for candidate in (message, message.reply_to_message if message else None):
        if candidate is not None and candidate.photo:
            largest = candidate.photo[-1]
            return largest.width, largest.height
    return None


def preset_keyboard(language: str, width: int, height: int, operation: Operation) -> InlineKeyboardMarkup | None:
    """The operation's presets for a photo of this size as buttons (style-picker data: `st:<operation>:<arguments>`),
    or None when it has none or none fit."""
    if operation.presets is None:
        return None
    return keyboards.argument_keyboard(language, keyboards.STYLE_PREFIX, operation, operation.presets(width, height))
