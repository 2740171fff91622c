"""Arguments a person would rather pick than type: /expand presets computed from the photo's size."""

from __future__ import annotations

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Message

from bot.aiart.models import MAX_PADDING
from bot.i18n import tr
from bot.operations.catalogue import Operation
from bot.tg import keyboards, texts

#: (label msgid or ratio text, width part, height part)
RATIOS = ((texts.EXPAND_SQUARE, 1, 1), ("4:3", 4, 3), ("16:9", 16, 9), ("9:16", 9, 16))
#: the "margin on every side" preset, as a share of the longer side
MARGIN_SHARE = 0.1


def photo_size(message: Message | None) -> tuple[int, int] | None:
    """The width and height of the photo a message carries or replies to (None for documents: Telegram gives no size)."""
    for candidate in (message, message.reply_to_message if message else None):
        if candidate is not None and candidate.photo:
            largest = candidate.photo[-1]
            return largest.width, largest.height
    return None


def _fitted(width: int, height: int, max_side: int | None) -> tuple[int, int]:
    """The size the worker hands the service: the photo fitted into the operation's longest side."""
    longest = max(width, height)
    if max_side is None or longest <= max_side:
        return width, height
    scale = max_side / longest
    return max(1, round(width * scale)), max(1, round(height * scale))


def _split(total: int) -> tuple[int, int]:
    return total // 2, total - total // 2


def expand_presets(width: int, height: int, operation: Operation) -> list[tuple[str, str]]:
    """(label, argument text) for each preset that fits the operation's limits, for a photo of this size."""
    width, height = _fitted(width, height, operation.limits.max_side)
    presets: list[tuple[str, tuple[int, int, int, int]]] = []
    for label, a, b in RATIOS:
        if width * b < height * a:
            left, right = _split(round(height * a / b) - width)
            padding = (left, 0, right, 0)
        else:
            top, bottom = _split(round(width * b / a) - height)
            padding = (0, top, 0, bottom)
        presets.append((label, padding))
    margin = max(1, round(MARGIN_SHARE * max(width, height)))
    presets.append((texts.EXPAND_MARGIN, (margin,) * 4))
    return [(label, " ".join(map(str, padding))) for label, padding in presets
            if any(padding) and max(padding) <= MAX_PADDING]


def expand_keyboard(lang: str, width: int, height: int, operation: Operation) -> InlineKeyboardMarkup | None:
    """Preset buttons (style-picker data: `st:expand:<left top right bottom>`), or None when none fit."""
    buttons = []
    for label, argument in expand_presets(width, height, operation):
        margin = argument.split()[0]
        text = tr(lang, label, pixels=margin) if label == texts.EXPAND_MARGIN else tr(lang, label)
        buttons.append(InlineKeyboardButton(text, callback_data=f"{keyboards.STYLE_PREFIX}:{operation.name}:{argument}"))
    return InlineKeyboardMarkup([buttons[i:i + 3] for i in range(0, len(buttons), 3)]) if buttons else None
