"""The buttons under a delivered result: again, another style, and the next operations on it.

Each press reads the job its button names from the database, so it works after a restart and on any
replica; the new job goes through the same queue (and quotas) as a typed command, and its result
replies to the message the button was on.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from telegram import CallbackQuery, Message, ReplyParameters, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler

from bot.chats.people import FOLLOWUPS_EVERYONE
from bot.i18n import render, tr
from bot.operations.catalogue import ArgumentError, Operation, ResultKind
from bot.operations.videos import PICK_QUESTION
from bot.store import JobRecord
from bot.tg import followups, texts
from bot.tg.answers import answer
from bot.tg.context import CustomContext, deps, language_for
from bot.tg.handlers.live_photos import send_as_live_photo
from bot.tg.handlers.router import Router
from bot.tg.queueing import queue
from bot.tg.replies import reply

log = logging.getLogger(__name__)

DOUBLE_TAP_KEY = "tap"
#: a press of the same button by the same person this soon after the last is a double tap, not a wish for two
#: jobs (a live photo keeps its own guard: bot.tg.live_photos)
DOUBLE_TAP = timedelta(seconds=5)


async def may_press(context: CustomContext, query: CallbackQuery, job: JobRecord) -> bool:
    """Whether the presser may use this job's buttons: its owner, anyone in private, or anyone where the group allows."""
    if query.from_user.id == job.user_id or job.chat_type == ChatType.PRIVATE:
        return True
    return bool((await deps(context).people.chat_settings(job.chat_id)).get(FOLLOWUPS_EVERYONE))


async def _first_tap(context: CustomContext, query: CallbackQuery, message: Message) -> bool:
    """Whether this press is not the second of a double tap: the same person's same button on the same message
    within DOUBLE_TAP (one insert decides, across replicas), which would make and charge the job twice. The
    same press handled again (Telegram sends an update again after a crash) is the first one still."""
    key = f"{message.message_id}:{query.from_user.id}:{query.data}"
    conversations = deps(context).conversations
    if await conversations.first_use(message.chat_id, DOUBLE_TAP_KEY, key, keep_for=DOUBLE_TAP, data={"query": query.id}):
        return True
    first = await conversations.get(message.chat_id, DOUBLE_TAP_KEY, key)
    return first is None or first.get("query") == query.id  # gone since: no longer a double tap


async def on_follow_up(update: Update, context: CustomContext) -> None:
    """A follow-up button was pressed."""
    query = update.callback_query
    d = deps(context)
    lang = await language_for(context, update=update)
    choice = followups.parse(query.data)
    message = query.message if isinstance(query.message, Message) else None
    job = await d.people.job(choice.job_id) if choice is not None else None
    operation = d.operations.get(job.operation) if job is not None else None
    if job is None or operation is None or message is None or job.chat_id != message.chat_id:
        await answer(query, tr(lang, texts.FU_GONE), alert=True)
        return
    if not await may_press(context, query, job):
        await answer(query, tr(lang, texts.FU_NOT_YOURS), alert=True)
        return
    if choice.action != followups.LIVE_PHOTO and not await _first_tap(context, query, message):
        await answer(query, tr(job.language, texts.FU_DOUBLE_TAP))
        return
    if choice.action == followups.AGAIN:
        if (refusal := operation.refusal(dict(job.args), len(job.inputs))) is not None:
            await answer(query, render(job.language, refusal), alert=True)
            return
        await answer(query)
        await queue(context, operation, dict(job.args), message, list(job.inputs), requester=query.from_user)
    elif choice.action == followups.STYLE:
        await _another_style(context, query, job, choice, message)
    elif choice.action in (followups.LONGER, followups.MODEL):
        await _another_video(context, query, job, choice, message)
    elif choice.action == followups.LIVE_PHOTO:
        await send_as_live_photo(context, query, job, message)
    else:
        await _next_operation(context, query, job, choice, message)


async def _another_style(context: CustomContext, query: CallbackQuery, job: JobRecord,
                         choice: followups.FollowUp, message: Message) -> None:
    d = deps(context)
    operation = d.operations[job.operation]
    if operation.style_group is None:
        await answer(query, tr(job.language, texts.FU_GONE), alert=True)
        return
    await answer(query)
    if not choice.argument:
        try:
            await context.bot.send_message(
                message.chat_id, tr(job.language, texts.STYLE_PROMPT),
                reply_markup=followups.style_keyboard(job, operation, d.styles),
                reply_parameters=ReplyParameters(message_id=message.message_id, allow_sending_without_reply=True))
        except TelegramError as error:
            log.info("could not show the style picker of job %s: %s", job.id, error)
        return
    if d.styles.group(operation.style_group).get(choice.argument) is None:
        return
    # the picker replies to the result: the new result replies to that same result
    source = message.reply_to_message or message
    await queue(context, operation, {**job.args, operation.style_argument: choice.argument}, source, list(job.inputs),
                requester=query.from_user)


async def _another_video(context: CustomContext, query: CallbackQuery, job: JobRecord,
                         choice: followups.FollowUp, message: Message) -> None:
    """Longer, or another model and length, of a video's job: the same input, the new choice (priced first)."""
    d = deps(context)
    operation = d.operations[job.operation]
    if choice.action == followups.LONGER:
        args = operation.longer(dict(job.args)) if operation.longer is not None else None
    elif choice.seconds is None:
        await answer(query)
        price = lambda args: d.credits.policy.price(operation.name, args)  # noqa: E731 - a one-line callback
        try:
            await context.bot.send_message(
                message.chat_id, tr(job.language, PICK_QUESTION),
                reply_markup=followups.model_keyboard(job, operation, price),
                reply_parameters=ReplyParameters(message_id=message.message_id, allow_sending_without_reply=True))
        except TelegramError as error:
            log.info("could not show the models of job %s: %s", job.id, error)
        return
    else:
        args = {**job.args, "model": choice.argument, "duration": choice.seconds}
        if (refusal := operation.refusal(args, len(job.inputs))) is not None:
            # a stale button (or a job made before the models' endpoints were checked): say which models can
            await answer(query, render(job.language, refusal), alert=True)
            return
        offered = operation.alternatives(dict(job.args), len(job.inputs)) if operation.alternatives is not None else []
        args = next((other for _, other in offered if other == args), None)  # a length the model still makes
    if args is None:
        await answer(query, tr(job.language, texts.FU_GONE), alert=True)
        return
    if (refusal := operation.refusal(args, len(job.inputs))) is not None:
        await answer(query, render(job.language, refusal), alert=True)
        return
    await answer(query)
    # a model picker replies to the video: the new video replies to that same video
    source = message.reply_to_message if choice.action == followups.MODEL and message.reply_to_message else message
    await queue(context, operation, args, source, list(job.inputs), requester=query.from_user)


async def _next_operation(context: CustomContext, query: CallbackQuery, job: JobRecord,
                          choice: followups.FollowUp, message: Message) -> None:
    d = deps(context)
    buttons = {(op.name, argument): op for op, _, argument in followups.next_operations(d.operations)}
    # a press on a picker of choices (a video's models and lengths) carries the picked argument text
    picked = {(name, text) for (name, argument), op in buttons.items() for _, text in followups.choices(op, argument)}
    operation = d.operations.get(choice.operation)
    key = (choice.operation, choice.argument)
    # a single picture's picker replies to the result: the new result replies to that same result
    source = (message.reply_to_message or message) if key in picked and choice.picture is None else message
    files = [file["id"] for file in job.result_files] or _files_on(source)
    job_op = d.operations.get(job.operation)
    video = job_op is not None and job_op.result is ResultKind.VIDEO
    # a video is no picture: nothing that works on a picture is offered under one, nor taken from a crafted press
    if operation is None or (key not in buttons and key not in picked) or not files or video:
        await answer(query, tr(job.language, texts.FU_GONE), alert=True)
        return
    if choice.picture is None and len(files) > 1:
        await answer(query)
        try:  # several pictures (an album): ask which one, on the buttons' own message
            await message.edit_text(tr(job.language, texts.FU_PICK_PICTURE, title=tr(job.language, operation.title_noun)),
                                    reply_markup=followups.picture_keyboard(job, choice))
        except TelegramError as error:
            log.info("could not ask which picture of job %s: %s", job.id, error)
        return
    index = choice.picture or 0
    if index >= len(files):
        await answer(query, tr(job.language, texts.FU_GONE), alert=True)
        return
    offered = followups.choices(operation, choice.argument)
    if len(offered) > 1:
        await answer(query)
        await _ask_choice(context, job, choice, operation, message)
        return
    try:  # one choice only is no question: its button said its price, and takes it
        args = operation.parse(offered[0][1] if offered else choice.argument)
    except ArgumentError:
        await answer(query, tr(job.language, texts.FU_GONE), alert=True)
        return
    await answer(query)
    # the new result replies to the message the button was on (the result, or an album's buttons)
    await queue(context, operation, args, source, [files[index]], requester=query.from_user)


async def _ask_choice(context: CustomContext, job: JobRecord, choice: followups.FollowUp, operation: Operation,
                      message: Message) -> None:
    """Show a next operation's choices with their prices before anything is spent: replying to a single result,
    or in place of an album's question which picture."""
    price = deps(context).credits.policy.price
    question = tr(job.language, operation.pick.question)
    markup = followups.pick_keyboard(job, choice, operation, price)
    if choice.picture is None:
        await reply(message, question, markup)
        return
    try:
        await message.edit_text(question, reply_markup=markup)
    except TelegramError as error:
        log.info("could not show the choices of %s for job %s: %s", operation.name, job.id, error)


def _files_on(message: Message) -> list[str]:
    """The picture on the result message itself: a press may come before its delivery is recorded."""
    if message.photo:
        return [message.photo[-1].file_id]
    return [message.document.file_id] if message.document is not None else []


def register(application: Application, router: Router) -> None:
    """Handle the follow-up buttons (before the photo menu's catch-all button handler)."""
    application.add_handler(CallbackQueryHandler(on_follow_up, pattern=rf"^{followups.PREFIX}:"))
