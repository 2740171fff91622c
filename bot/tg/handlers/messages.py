"""The front door: every message, edit and channel post comes through here and is routed or answered."""

from __future__ import annotations

import logging

from telegram import Update
from telegram.constants import ChatType
from telegram.ext import ApplicationHandlerStop, ContextTypes

from bot.tg import texts
from bot.tg.context import deps
from bot.tg.flow import reply
from bot.tg.handlers.menu import on_media, on_text
from bot.tg.handlers.router import Router

log = logging.getLogger(__name__)
ROUTER_KEY = "router"


async def check_access(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Stop updates from users and chats outside the allowlists (answering in private chats only)."""
    user, chat = update.effective_user, update.effective_chat
    if deps(context).access.allows(user.id if user else None, chat.id if chat else None):
        return
    if update.callback_query:
        await update.callback_query.answer(texts.NOT_ALLOWED, show_alert=True)
    elif chat and chat.type == ChatType.PRIVATE and update.effective_message:
        await reply(update.effective_message, texts.NOT_ALLOWED)
    raise ApplicationHandlerStop


async def on_message(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """A new message: run its command, or treat its photo as a menu request."""
    message = update.message
    router: Router = context.application.bot_data[ROUTER_KEY]
    call = router.command_in(message, context.bot.username)
    if call is None:
        if message.text and message.text.startswith("/") and message.chat.type == ChatType.PRIVATE:
            await reply(message, texts.UNKNOWN_COMMAND)  # a command addressed to another bot is not ours to judge
        elif not message.text:
            await on_media(update, context)
        elif message.chat.type == ChatType.PRIVATE:
            await on_text(update, context)
        return
    handler = router.handlers.get(call.name)
    if handler is None:
        addressed = "@" in (message.text or message.caption or "").split(maxsplit=1)[0]
        if message.chat.type == ChatType.PRIVATE or addressed:
            await reply(message, texts.UNKNOWN_COMMAND)
        return
    await handler(update, context, call)


async def on_edit(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Edits are not re-run; say so when the edit carries a command for us."""
    message = update.edited_message
    router: Router = context.application.bot_data[ROUTER_KEY]
    call = router.command_in(message, context.bot.username)
    if call is not None and call.name in router.handlers:
        await reply(message, texts.EDITED_IGNORED)


async def on_channel_post(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Channels are not served; answer a command once so the admin knows why."""
    post = update.channel_post
    router: Router = context.application.bot_data[ROUTER_KEY]
    if router.command_in(post, context.bot.username) is not None:
        await reply(post, texts.CHANNEL_IGNORED)


async def on_error(update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
    """Log handler errors (without the update's content) and tell the user something went wrong."""
    log.error("handler error: %s", type(context.error).__name__, exc_info=context.error)
    if isinstance(update, Update) and update.effective_message and update.effective_chat:
        await reply(update.effective_message, "Sorry, something went wrong on my side. Please try again.")
