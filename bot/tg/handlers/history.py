"""/history: the caller's recent jobs in this chat, each delivered result resendable from its stored
Telegram file (no service call: Telegram keeps the file)."""

from __future__ import annotations

import logging

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, InputMediaDocument, InputMediaPhoto, Message, Update
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler

from bot.i18n import render, tr
from bot.i18n.formats import when
from bot.operations.catalogue import ResultKind
from bot.store import JobRecord, JobState
from bot.tg import texts
from bot.tg.answers import answer
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext, deps, language_for, sender_id
from bot.tg.handlers.router import Router
from bot.tg.keyboards import rows
from bot.tg.replies import reply

log = logging.getLogger(__name__)

PREFIX = "hi"
LISTED = 10

_OUTCOMES = {JobState.DELIVERED: texts.OUTCOME_DELIVERED, JobState.FAILED: texts.OUTCOME_FAILED,
             JobState.EXPIRED: texts.OUTCOME_FAILED, JobState.CANCELLED: texts.OUTCOME_CANCELLED}


def history_text(lang: str, jobs: list[JobRecord], operations) -> str:
    """The /history list, newest first."""
    if not jobs:
        return tr(lang, texts.HISTORY_EMPTY)
    lines = [tr(lang, texts.HISTORY_TITLE)]
    for number, job in enumerate(jobs, start=1):
        operation = operations.get(job.operation)
        what = render(lang, operation.describe(job.args)) if operation else job.operation
        outcome = tr(lang, _OUTCOMES.get(job.state, texts.OUTCOME_ACTIVE))
        lines.append(tr(lang, texts.HISTORY_LINE, number=number, what=what[:80], when=when(lang, job.created_at),
                        outcome=outcome))
    return "\n".join(lines)


async def show_history(update: Update, context: CustomContext, call: CommandCall) -> None:
    """List the caller's recent jobs here, with a button to send each result again."""
    message, d = update.effective_message, deps(context)
    user_id = sender_id(message)
    lang = await language_for(context, update=update)
    if user_id is None:
        return
    jobs = await d.people.recent(message.chat_id, user_id, limit=LISTED)
    await reply(message, history_text(lang, jobs, d.operations), resend_keyboard(lang, jobs))


def resend_keyboard(lang: str, jobs: list[JobRecord]) -> InlineKeyboardMarkup | None:
    """A button per listed job with a result, to send that result again (None: none has one)."""
    buttons = [InlineKeyboardButton(tr(lang, texts.HISTORY_RESEND, number=number), callback_data=f"{PREFIX}:{job.id}")
               for number, job in enumerate(jobs, start=1) if job.result_files]
    return InlineKeyboardMarkup(rows(buttons, 3)) if buttons else None


async def on_resend(update: Update, context: CustomContext) -> None:
    """Send a stored result again, by its Telegram file ids."""
    query, d = update.callback_query, deps(context)
    lang = await language_for(context, update=update)
    listing = query.message if isinstance(query.message, Message) else None
    job_id = (query.data or "").partition(":")[2]
    job = await d.people.job(int(job_id)) if job_id.isdecimal() else None
    if job is None or listing is None or job.chat_id != listing.chat_id or not job.result_files:
        await answer(query, tr(lang, texts.FU_GONE), alert=True)
        return
    if job.user_id != query.from_user.id:
        await answer(query, tr(lang, texts.HISTORY_NOT_YOURS), alert=True)
        return
    await answer(query)
    operation = d.operations.get(job.operation)
    caption = texts.caption("✅ " + render(lang, operation.describe(job.args))) if operation else None
    try:
        await _send(context, listing, job, caption)
    except TelegramError as error:
        log.info("could not resend job %s: %s", job.id, error)
        await reply(listing, tr(lang, texts.FU_GONE))


async def _send(context: CustomContext, listing: Message, job: JobRecord, caption: str | None) -> None:
    bot, chat_id, files = context.bot, listing.chat_id, job.result_files
    if len(files) == 1:
        file = files[0]
        if file["kind"] == "photo":
            await bot.send_photo(chat_id, file["id"], caption=caption, reply_to_message_id=listing.message_id)
        elif file["kind"] == ResultKind.VIDEO:
            await bot.send_video(chat_id, file["id"], caption=caption, supports_streaming=True,
                                 reply_to_message_id=listing.message_id)
        else:
            await bot.send_document(chat_id, file["id"], caption=caption, reply_to_message_id=listing.message_id)
        return
    for start in range(0, len(files), 10):
        chunk = files[start:start + 10]
        kinds = {file["kind"] for file in chunk}
        media_type = InputMediaPhoto if kinds == {"photo"} else InputMediaDocument
        media = [media_type(file["id"], caption=caption if start == 0 and i == 0 else None)
                 for i, file in enumerate(chunk)]
        if len(media) == 1:
            await bot.send_document(chat_id, chunk[0]["id"])
        else:
            await bot.send_media_group(chat_id, media, reply_to_message_id=listing.message_id)


def register(application: Application, router: Router) -> None:
    """/history and its resend buttons."""
    router.add("history", show_history, texts.HISTORY_COMMAND)
    application.add_handler(CallbackQueryHandler(on_resend, pattern=rf"^{PREFIX}:\d+$"))
