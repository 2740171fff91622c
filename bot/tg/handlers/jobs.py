"""/status and /cancel: this chat's jobs."""

from __future__ import annotations

from telegram import Update
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.tg import texts
from bot.tg.commands import CommandCall
from bot.tg.context import deps
from bot.tg.flow import drop_pending, reply
from bot.tg.handlers.router import Router


async def show_status(update: Update, context: ContextTypes.DEFAULT_TYPE, call: CommandCall) -> None:
    """List the chat's unfinished jobs."""
    d = deps(context)
    jobs = await d.jobs.active(update.effective_chat.id, user_id=None)
    await reply(update.effective_message, texts.status_list(jobs, d.operations, d.clock()))


async def cancel(update: Update, context: ContextTypes.DEFAULT_TYPE, call: CommandCall) -> None:
    """Cancel the chat's unfinished jobs (and a half-given face swap)."""
    user = update.effective_user
    dropped = drop_pending(context, user.id) if user else False
    cancelled = await deps(context).jobs.cancel(update.effective_chat.id, user_id=None)
    if not cancelled:
        await reply(update.effective_message, texts.PAIR_STOPPED if dropped else texts.NOTHING_TO_CANCEL)
        return
    await reply(update.effective_message, texts.cancelled_text(len(cancelled)))
    for job in cancelled:
        if job.status_message_id is not None:
            await _tidy(context, job.chat_id, job.status_message_id)


async def _tidy(context: ContextTypes.DEFAULT_TYPE, chat_id: int, message_id: int) -> None:
    try:
        await context.bot.delete_message(chat_id, message_id)
    except TelegramError:  # already deleted or too old: nothing to tidy
        return


def register(router: Router) -> None:
    router.add("status", show_status, "Jobs in progress")
    router.add("cancel", cancel, "Stop your jobs in this chat")
