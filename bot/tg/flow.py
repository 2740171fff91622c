"""Turning a user's request into a queued job: arguments, images, quotas, the status message."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from telegram import InlineKeyboardMarkup, Message, ReplyParameters
from telegram.error import TelegramError
from telegram.ext import ContextTypes

from bot.i18n import tr
from bot.jobs.service import JobRequest, QuotaExceeded
from bot.operations.catalogue import ArgumentError, Operation, StyleMissing
from bot.tg import keyboards, texts
from bot.tg.context import deps, language_for, sender_id
from bot.tg.inputs import FileInput, problem_with

log = logging.getLogger(__name__)

PENDING_KEY = "pending"
PICKER_IMAGES_KEY = "picker_images"
#: style pickers per chat whose images are remembered (Telegram does not nest reply_to_message)
PICKERS_KEPT = 200
PENDING_FOR = timedelta(minutes=10)
#: operations expected to finish within this many seconds are acknowledged with a reaction
QUICK_JOB_S = 10.0


#: how long an album's items are awaited after the last one arrived (Telegram sends them together)
ALBUM_QUIET_S = 1.5


@dataclass
class PendingInputs:
    """A job waiting for more images from one user in one chat (face swap: face, then template; an album)."""

    operation: str
    args_text: str
    source: Message
    file_ids: list[str] = field(default_factory=list)
    started: datetime | None = None
    #: set while the rest of an album is collected: only its items are taken, and quiet time closes it
    album_id: str | None = None
    album_item: asyncio.Event = field(default_factory=asyncio.Event)


def _job_request(source: Message, operation: Operation, args: dict, inputs: list[str], language: str) -> JobRequest:
    # an anonymous admin or a channel is its sender chat: quotas count per sender chat, not per shared bot user
    chat, user, sender_chat = source.chat, source.from_user, source.sender_chat
    if sender_chat is not None:
        username, first_name = sender_chat.username, sender_chat.title
    else:
        username, first_name = (user.username, user.first_name) if user else (None, None)
    return JobRequest(chat_id=chat.id, chat_type=chat.type, chat_title=chat.title,
                      user_id=sender_id(source), username=username,
                      first_name=first_name, reply_to_message_id=source.message_id,
                      operation=operation.name, args=args, inputs=inputs,
                      language=language)


async def reply(source: Message, text: str, markup: InlineKeyboardMarkup | None = None) -> Message | None:
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


async def refuse(context: ContextTypes.DEFAULT_TYPE, source: Message, operation: Operation | None,
                 reason: str, *, args: dict | None = None, editable: Message | None = None) -> None:
    """Tell the user why a request cannot run, and keep a record of it as a failed job."""
    await show(source, reason, editable)
    if operation is None:
        return
    try:
        request = _job_request(source, operation, args or {}, [], await language_for(context, source))
        await deps(context).jobs.record_refused(request, reason)
    except Exception:  # the reply matters more than the record
        log.exception("could not record a refused %s request", operation.name)


async def start_operation(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str,
                          source: Message, images: list[FileInput], *, editable: Message | None = None) -> None:
    """Parse, check and queue one operation for the user who sent `source`."""
    d = deps(context)
    language = await language_for(context, source)
    try:
        args = operation.parse(args_text)
    except StyleMissing:
        group = d.styles.group(operation.style_group)
        picker = await show(source, tr(language, texts.STYLE_PROMPT), editable,
                            keyboards.style_picker(operation.name, group))
        if picker is not None and images:
            remember_picker_images(context, picker.message_id, images)
        return
    except ArgumentError as error:
        await refuse(context, source, operation, tr(language, texts.USAGE_LINE, reason=error.text,
                                                    usage=tr(language, operation.usage)), editable=editable)
        return
    for image in images:
        if (problem := problem_with(image)) is not None:
            await refuse(context, source, operation, tr(language, problem), args=args, editable=editable)
            return
    if operation.images == 1 and not images:
        await refuse(context, source, operation,
                     tr(language, texts.NEED_IMAGE, title=tr(language, operation.title),
                        usage=tr(language, operation.usage)), args=args,
                     editable=editable)
        return
    if operation.images == 2 and len(images) < 2:
        await wait_for_more(context, operation, args_text, source, images, editable=editable)
        return
    if source.media_group_id and images and operation.most_images > max(operation.images, 1):
        # optional extra images (reference photos) come as an album: the rest of it is on its way
        collect_album(context, operation, args_text, source, images)
        return
    await queue(context, operation, args, source, [image.file_id for image in images[:operation.most_images]],
                editable=editable)


async def react(source: Message, emoji: str) -> bool:
    """Put a reaction on the user's message; False when Telegram refused it (reactions off in that chat)."""
    try:
        return bool(await source.set_reaction(emoji))
    except TelegramError as error:
        log.debug("could not react in chat %s: %s", source.chat_id, error)
        return False


async def queue(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args: dict, source: Message,
                inputs: list[str], *, editable: Message | None = None) -> None:
    """Acknowledge the request, then store the job (or say which quota stops it).

    A quick operation is acknowledged with a reaction on the user's message: its result follows in
    seconds, and a reaction is one call where a status message is two (sent, then deleted). A slower
    one, a menu being answered (it has to change anyway), or a chat where reactions are off gets a
    status message. Either comes before the job is stored, so the job knows its status message and
    the worker can never finish before it exists.
    """
    d = deps(context)
    language = await language_for(context, source)
    request = _job_request(source, operation, args, inputs, language)
    status = None
    quick = editable is None and operation.typical_seconds <= QUICK_JOB_S
    if not (quick and await react(source, texts.ACK_REACTION)):
        status = await show(source, texts.queued_text(operation, args, language=language), editable)
        if status is not None:
            request = replace(request, status_message_id=status.message_id)
    try:
        outcome = await d.jobs.enqueue(request)
    except Exception:
        log.exception("could not store a %s job", operation.name)
        await show(source, tr(language, texts.QUEUE_FAILED), status)
        return
    if isinstance(outcome, QuotaExceeded):
        await show(source, texts.quota_text(outcome.reason, outcome.retry_at, d.clock(), language=language), status)
        return
    log.info("job %s: queued %s for chat %s", outcome.id, operation.name, outcome.chat_id)


def _pending(context: ContextTypes.DEFAULT_TYPE) -> dict[int, PendingInputs]:
    return context.chat_data.setdefault(PENDING_KEY, {})


async def wait_for_more(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str, source: Message,
                        images: list[FileInput], *, editable: Message | None = None) -> None:
    """Remember a two-image request and ask for what is missing (albums bring the rest by themselves)."""
    user_id = sender_id(source) or 0
    pending = PendingInputs(operation.name, args_text, source, [image.file_id for image in images],
                            started=deps(context).clock())
    _pending(context)[user_id] = pending
    if source.media_group_id and images:
        return  # the album's next photo completes the pair
    language = await language_for(context, source)
    first, second = (tr(language, name) for name in operation.image_names)
    text = (tr(language, texts.NEED_PAIR_SECOND, first=first, second=second) if images
            else tr(language, texts.NEED_PAIR_FIRST, title=tr(language, operation.title), first=first, second=second))
    await show(source, f"{text} {tr(language, texts.PAIR_TIMEOUT_HINT)}", editable)


def _expired(context: ContextTypes.DEFAULT_TYPE, pending: PendingInputs) -> bool:
    return pending.started is not None and deps(context).clock() - pending.started > PENDING_FOR


def take_expired(context: ContextTypes.DEFAULT_TYPE, user_id: int, language: str) -> str | None:
    """Forget this user's two-image request if its time ran out; the notice to show them, else None."""
    pending = _pending(context).get(user_id)
    if pending is None or not _expired(context, pending):
        return None
    del _pending(context)[user_id]
    operation = deps(context).operations.get(pending.operation)
    if operation is None:
        return None
    return tr(language, texts.PAIR_EXPIRED, title=tr(language, operation.title).lower(),
              second=tr(language, operation.image_names[-1]), minutes=max(1, int(PENDING_FOR.total_seconds() // 60)),
              command=f"/{operation.name}")


def still_waiting(context: ContextTypes.DEFAULT_TYPE, user_id: int, language: str) -> str | None:
    """A reminder of what this user's live two-image request still needs, or None without one."""
    pending = _pending(context).get(user_id)
    if pending is None or _expired(context, pending):
        return None
    operation = deps(context).operations.get(pending.operation)
    if operation is None:
        return None
    needed = operation.image_names[min(len(pending.file_ids), len(operation.image_names) - 1)]
    return tr(language, texts.PAIR_STILL_WAITING, needed=tr(language, needed), title=tr(language, operation.title).lower())


async def continue_pending(context: ContextTypes.DEFAULT_TYPE, message: Message, images: list[FileInput]) -> bool:
    """Add an image to this user's waiting two-image request; True when the message was used."""
    user_id = sender_id(message) or 0
    pending = _pending(context).get(user_id)
    if pending is None or _expired(context, pending):
        return False
    d = deps(context)
    operation = d.operations[pending.operation]
    for image in images:
        if (problem := problem_with(image)) is not None:
            # the request itself is still fine: say what was wrong with this file and keep waiting
            language = await language_for(context, message)
            await reply(message, f"{tr(language, problem)}\n{still_waiting(context, user_id, language)}")
            return True
    if pending.album_id is not None:
        if message.media_group_id != pending.album_id:
            return False
        pending.file_ids.extend(image.file_id for image in images)
        pending.album_item.set()
        return True
    pending.file_ids.extend(image.file_id for image in images)
    if len(pending.file_ids) < operation.images:
        if not message.media_group_id:
            language = await language_for(context, message)
            first, second = (tr(language, name) for name in operation.image_names)
            await reply(message, tr(language, texts.NEED_PAIR_SECOND, first=first, second=second))
        return True
    del _pending(context)[user_id]
    args = operation.parse(pending.args_text)
    await queue(context, operation, args, pending.source, pending.file_ids[: operation.images])
    return True


def collect_album(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str, source: Message,
                  images: list[FileInput]) -> None:
    """Take the rest of the album `source` belongs to, then queue the job once no item came for a moment."""
    user_id = source.from_user.id if source.from_user else 0
    pending = PendingInputs(operation.name, args_text, source, [image.file_id for image in images],
                            started=deps(context).clock(), album_id=source.media_group_id)
    _pending(context)[user_id] = pending
    context.application.create_task(_queue_album_when_complete(context, user_id, pending),
                                    name=f"album-{source.media_group_id}")


async def _queue_album_when_complete(context: ContextTypes.DEFAULT_TYPE, user_id: int,
                                     pending: PendingInputs) -> None:
    while True:  # until no item came for ALBUM_QUIET_S
        try:
            await asyncio.wait_for(pending.album_item.wait(), ALBUM_QUIET_S)
        except TimeoutError:
            break
        pending.album_item.clear()
    if _pending(context).get(user_id) is not pending:
        return  # replaced or cancelled meanwhile
    del _pending(context)[user_id]
    operation = deps(context).operations[pending.operation]
    if len(pending.file_ids) > operation.most_images:
        language = await language_for(context, pending.source)
        await refuse(context, pending.source, operation,
                     tr(language, texts.TOO_MANY_IMAGES, title=tr(language, operation.title),
                        count=operation.most_images))
        return
    await queue(context, operation, operation.parse(pending.args_text), pending.source, pending.file_ids)


def drop_pending(context: ContextTypes.DEFAULT_TYPE, user_id: int) -> bool:
    """Forget a user's waiting two-image request; True if there was one."""
    return _pending(context).pop(user_id, None) is not None


def remember_picker_images(context: ContextTypes.DEFAULT_TYPE, picker_id: int, images: list[FileInput]) -> None:
    """Keep the images a style picker was shown for: when its button is pressed, the picker's
    reply_to_message (the user's command) comes without the photo that command replied to."""
    kept: dict[int, list[FileInput]] = context.chat_data.setdefault(PICKER_IMAGES_KEY, {})
    kept[picker_id] = list(images)
    while len(kept) > PICKERS_KEPT:
        del kept[next(iter(kept))]


def picker_images(context: ContextTypes.DEFAULT_TYPE, picker_id: int) -> list[FileInput]:
    """The images remembered for a style picker (none after a restart, or for a picker without images)."""
    return list(context.chat_data.get(PICKER_IMAGES_KEY, {}).get(picker_id, []))
