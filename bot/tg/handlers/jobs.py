"""/status and /cancel: the caller's jobs in this chat; `/cancel all` stops everyone's, for group admins."""

from __future__ import annotations

import logging

from telegram import Message, Update
from telegram.constants import ChatType
from telegram.ext import Application

from bot.i18n import tr
from bot.tg import pending, texts
from bot.tg.answers import admin_refusal
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext, deps, language_for, sender_id
from bot.tg.handlers.router import Router
from bot.tg.replies import delete_quietly, reply

log = logging.getLogger(__name__)

#: what getChatMember says of someone who may stop everyone's jobs in a group


async def show_status(update: Update, context: CustomContext, call: CommandCall) -> None:
    """List the caller's unfinished jobs in this chat (what /cancel would stop)."""
    d = deps(context)
    owner = sender_id(update.effective_message)
    jobs = await d.jobs.active(update.effective_chat.id, user_id=owner) if owner is not None else []
    language = await language_for(context, update=update)
    await reply(update.effective_message, texts.status_list(jobs, d.operations, d.clock(), language=language))


async def cancel(update: Update, context: CustomContext, call: CommandCall) -> None:
    """Cancel the caller's unfinished jobs in this chat (and a half-given face swap); `all`: everyone's."""
    chat, message = update.effective_chat, update.effective_message
    # an anonymous admin or a channel owns its jobs as its sender chat, as when they were queued
    owner = sender_id(message)
    language = await language_for(context, update=update)
    if owner is None:
        await reply(message, tr(language, texts.NOTHING_TO_CANCEL))
        return
    everyone = call.args.lower() == "all" and chat.type != ChatType.PRIVATE
    if everyone:
        refusal = await _refusal_of_cancel_all(context, message)
        if refusal is not None:
            await reply(message, tr(language, refusal))
            return
    dropped = await pending.drop(context, owner, chat.id)
    cancelled = await deps(context).jobs.cancel(chat.id, user_id=None if everyone else owner)
    if not cancelled:
        nothing = texts.NOTHING_TO_CANCEL_IN_CHAT if everyone else texts.NOTHING_TO_CANCEL
        await reply(message, tr(language, texts.PAIR_STOPPED if dropped else nothing))
        return
    await reply(message, texts.cancelled_everyones_text(len(cancelled), language=language) if everyone
                else texts.cancelled_text(len(cancelled), language=language))
    for job in cancelled:
        if job.status_message_id is not None:
            await delete_quietly(context.bot, job.chat_id, job.status_message_id)


async def _refusal_of_cancel_all(context: CustomContext, message: Message) -> str | None:
    """Why the sender may not stop everyone's jobs in the group (a msgid), or None if they may (failing closed)."""
    return await admin_refusal(context, message.chat_id, message.from_user.id if message.from_user else None,
                               message.sender_chat.id if message.sender_chat else None,
                               not_admin=texts.CANCEL_ALL_ADMINS_ONLY, check_failed=texts.ADMIN_CHECK_FAILED)


def register(application: Application, router: Router) -> None:
    """/status and /cancel."""
    router.add("status", show_status, texts.STATUS_COMMAND)
    router.add("cancel", cancel, texts.CANCEL_COMMAND)
