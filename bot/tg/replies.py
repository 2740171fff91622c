"""Answering a user's message: a reply, an edit of the menu being answered, a reaction, a deletion."""

from __future__ import annotations

import logging

from telegram import Bot, ForceReply, InlineKeyboardMarkup, Message, ReplyParameters
from telegram.error import TelegramError

log = logging.getLogger(__name__)


async def reply(source: Message, text: str,
                markup: InlineKeyboardMarkup | ForceReply | None = None) -> Message | None:
    """Reply to a user's message; a failure to reply is logged, never raised into the handler."""
    try:
        return await source.get_bot().send_message(
            source.chat_id, text, reply_markup=markup,
            reply_parameters=ReplyParameters(message_id=source.message_id, allow_sending_without_reply=True))
    except TelegramError as error:
        log.warning("could not reply in chat %s: %s", source.chat_id, error)
        return None


async def show(source: Message, text: str, editable: Message | None,
               markup: InlineKeyboardMarkup | None = None) -> Message | None:
    """Edit `editable` (a menu being answered) into `text`, or reply to the user's message."""
    if editable is None:
        return await reply(source, text, markup)
    try:
        edited = await editable.edit_text(text, reply_markup=markup)
        return edited if isinstance(edited, Message) else editable
    except TelegramError as error:
        log.debug("could not edit message %s: %s", editable.message_id, error)
        return await reply(source, text, markup)


async def react(source: Message, emoji: str) -> bool:
    """Put a reaction on the user's message; False when Telegram refused it (reactions off in that chat)."""
    try:
        return bool(await source.set_reaction(emoji))
    except TelegramError as error:
        log.debug("could not react in chat %s: %s", source.chat_id, error)
        return False


async def delete_quietly(bot: Bot, chat_id: int, message_id: int) -> None:
    """Delete one of the bot's messages; one already gone, or too old to delete, is nothing worse for the user."""
    try:
        await bot.delete_message(chat_id, message_id)
    except TelegramError as error:
        log.debug("could not delete message %s: %s", message_id, error)
