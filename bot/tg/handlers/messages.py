"""The front door: every message, edit and channel post comes through here and is routed or answered."""

from __future__ import annotations

import logging
import time

from telegram import Update
from telegram.constants import ChatType
from telegram.ext import Application, ApplicationHandlerStop, MessageHandler, TypeHandler, filters

from bot.i18n import tr
from bot.tg import texts
from bot.tg.context import CustomContext, Deps, deps, is_payment, language_for, update_sender_id
from bot.tg.handlers import guest, inline
from bot.tg.handlers.menu import on_media, on_text
from bot.tg.handlers.router import Router
from bot.tg.replies import reply

log = logging.getLogger(__name__)
#: a refused sender is told the bot is private at most once in this many seconds
REFUSE_EVERY_S = 600.0
#: senders remembered as refused before the ones told long ago are forgotten
_REFUSED_KEPT = 4096


def _allowed(d: Deps, update: Update) -> bool:
    chat = update.effective_chat
    return d.access.allows(update_sender_id(update), chat.id if chat else None)


async def check_access(update: Update, context: CustomContext) -> None:
    """Stop updates from users and chats outside the allowlists (answering in private chats only).

    Fails closed: whatever the answer to the refused user does (a query too old to answer, a network
    error), the update stops here; an exception would otherwise go to the error handler and let the
    update run on to the normal handlers.
    """
    if is_payment(update) and update.pre_checkout_query is None:
        return  # a successful payment: the Stars are taken, so it is credited whoever paid
    if _allowed(deps(context), update):
        return
    chat = update.effective_chat
    # a refused sender's language is their Telegram app's: no stored choice is read for them
    user = update.effective_user
    language = user.language_code if user else None
    if _refusal_due(context.bot_data.refused_logged, update):
        # how an operator learns the ids to allow (README, "Restrict it"); once per sender and quiet spell
        log.info("refused user %s in chat %s: not in BOT_ALLOWED_USERS or BOT_ALLOWED_CHATS",
                 user.id if user else None, chat.id if chat else None)
    try:
        if update.pre_checkout_query:
            # unanswered, the payment would hang until Telegram gives up after 10 s
            await update.pre_checkout_query.answer(ok=False, error_message=tr(language, texts.PAYMENT_NOT_ALLOWED))
        elif update.inline_query:
            await inline.refuse_query(update)
        elif update.chosen_inline_result:
            await inline.refuse_chosen(update)
        elif update.guest_message:  # the bot is not in that chat: only the guest answer can say it
            await guest.refuse(update)
        elif update.callback_query:
            await update.callback_query.answer(tr(language, texts.NOT_ALLOWED), show_alert=True)
        elif chat and chat.type == ChatType.PRIVATE and update.effective_message and _refusal_due(context.bot_data.refused, update):
            await reply(update.effective_message, tr(language, texts.NOT_ALLOWED))
    except Exception as error:
        log.info("could not tell a refused user (%s)", type(error).__name__)
    raise ApplicationHandlerStop


def _refusal_due(told: dict[int | None, float], update: Update) -> bool:
    """Whether to tell this refused sender again (once per REFUSE_EVERY_S: a flood of them costs one reply);
    `told` is when each was last told (or, for the log line that names them, logged)."""
    sender, now = update_sender_id(update), time.monotonic()
    last = told.get(sender)
    if last is not None and now - last < REFUSE_EVERY_S:
        return False
    told[sender] = now
    if len(told) > _REFUSED_KEPT:
        for stale in [sender for sender, at in told.items() if now - at >= REFUSE_EVERY_S]:
            del told[stale]
    return True


async def send_flood_notice(application: Application, update: Update) -> None:
    """Tell a flooding chat, once per flood, that some of its messages were skipped (not refused senders)."""
    chat = update.effective_chat
    if chat is None or chat.type == ChatType.CHANNEL or guest.is_guest(update) \
            or not _allowed(application.bot_data.deps, update):
        return
    user = update.effective_user
    await application.bot.send_message(chat.id, tr(user.language_code if user else None, texts.FLOOD_NOTICE))


async def on_message(update: Update, context: CustomContext) -> None:
    """A new message: run its command, or treat its photo as a menu request."""
    message = update.message
    router = context.bot_data.router
    call = router.command_in(message, context.bot.username)
    if call is None:
        if message.text and message.text.startswith("/") and message.chat.type == ChatType.PRIVATE:
            await reply(message, tr(await language_for(context, message), texts.UNKNOWN_COMMAND))  # a command addressed to another bot is not ours to judge
        elif not message.text:
            await on_media(update, context)
        elif message.chat.type == ChatType.PRIVATE:
            await on_text(update, context)
        return
    handler = router.handlers.get(call.name)
    if handler is None:
        addressed = "@" in (message.text or message.caption or "").split(maxsplit=1)[0]
        if message.chat.type == ChatType.PRIVATE or addressed:
            await reply(message, tr(await language_for(context, message), texts.UNKNOWN_COMMAND))
        return
    await handler(update, context, call)


async def on_edit(update: Update, context: CustomContext) -> None:
    """Edits are not re-run; say so when the edit carries a command for us."""
    message = update.edited_message
    router = context.bot_data.router
    call = router.command_in(message, context.bot.username)
    if call is not None and call.name in router.handlers:
        await reply(message, tr(await language_for(context, message), texts.EDITED_IGNORED))


async def on_channel_post(update: Update, context: CustomContext) -> None:
    """Channels are not served; answer a command once so the admin knows why."""
    post = update.channel_post
    router = context.bot_data.router
    if router.command_in(post, context.bot.username) is not None:
        await reply(post, tr(None, texts.CHANNEL_IGNORED))  # a channel has no language of its own


async def on_error(update: object, context: CustomContext) -> None:
    """Log handler errors (without the update's content) and tell the user something went wrong."""
    log.error("handler error: %s", type(context.error).__name__, exc_info=context.error)
    if isinstance(update, Update) and update.effective_message and update.effective_chat \
            and not guest.is_guest(update):  # the bot is not in a guest message's chat
        user = update.effective_user
        await reply(update.effective_message, tr(user.language_code if user else None, texts.HANDLER_ERROR))


def register(application: Application, router: Router) -> None:
    """The access check before every update, every message, edit and channel post, the flood notice, the error reply."""
    application.bot_data.flood_notice = lambda update: send_flood_notice(application, update)
    application.add_handler(TypeHandler(Update, check_access), group=-1)
    application.add_handler(MessageHandler(filters.UpdateType.MESSAGE, on_message))
    application.add_handler(MessageHandler(filters.UpdateType.EDITED_MESSAGE, on_edit))
    application.add_handler(MessageHandler(filters.UpdateType.CHANNEL_POST, on_channel_post))
    application.add_error_handler(on_error)
