"""Turning a user's request into a queued job: arguments, images, quotas, the status message."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from telegram import Bot, ForceReply, InlineKeyboardMarkup, Message, ReplyParameters, User
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application, CallbackContext, ContextTypes

from bot.i18n import language_of, tr
from bot.jobs.conversations import Conversations
from bot.jobs.people import argument_setting, style_setting
from bot.jobs.service import JobRequest, NotEnoughCredits, QuotaExceeded
from bot.operations.catalogue import ArgumentError, Operation, StyleMissing
from bot.store.inbox import UpdateHandledElsewhere
from bot.tg import keyboards, presets, texts
from bot.tg.context import DEPS_KEY, Deps, deps, language_for, person_settings, sender_id
from bot.tg.inputs import FileInput, problem_with

log = logging.getLogger(__name__)

PENDING_KEY = "pending"
PICKER_IMAGES_KEY = "picker"
#: how long a style picker's images are remembered (Telegram does not nest reply_to_message)
PICKER_KEPT_FOR = timedelta(days=2)
PENDING_FOR = timedelta(minutes=10)
#: a two-image request is remembered this long past PENDING_FOR, to tell its user it ran out
PENDING_KEPT_AFTER = timedelta(days=1)
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
    #: how many of the album's items reached the bot (any kind: a video adds no image)
    album_items: int = 1


def _job_request(source: Message, operation: Operation, args: dict, inputs: list[str], language: str,
                 requester: User | None = None) -> JobRequest:
    # an anonymous admin or a channel is its sender chat: quotas count per sender chat, not per shared bot user
    chat, user, sender_chat = source.chat, source.from_user, source.sender_chat
    if requester is not None:  # a button pressed under the bot's own message: the presser asks
        return JobRequest(chat_id=chat.id, chat_type=chat.type, chat_title=chat.title, user_id=requester.id,
                          username=requester.username, first_name=requester.first_name,
                          reply_to_message_id=source.message_id, operation=operation.name, args=args,
                          inputs=inputs, language=language)
    if sender_chat is not None:
        username, first_name = sender_chat.username, sender_chat.title
    else:
        username, first_name = (user.username, user.first_name) if user else (None, None)
    return JobRequest(chat_id=chat.id, chat_type=chat.type, chat_title=chat.title,
                      user_id=sender_id(source), username=username,
                      first_name=first_name, reply_to_message_id=source.message_id,
                      operation=operation.name, args=args, inputs=inputs,
                      language=language)


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


async def refuse(context: ContextTypes.DEFAULT_TYPE, source: Message, operation: Operation | None,
                 reason: str, *, args: dict | None = None, editable: Message | None = None) -> None:
    """Keep a record of a request that cannot run as a failed job, and tell the user why.

    The record comes first: the reply may wait for the chat's Telegram limit, and a crash meanwhile
    must not leave the request without a trace (a redelivered update is recognised by its record).
    """
    if operation is not None:
        try:
            request = _job_request(source, operation, args or {}, [], await language_for(context, source))
            await deps(context).jobs.record_refused(request, reason)
        except Exception:  # the reply matters more than the record
            log.exception("could not record a refused %s request", operation.name)
    await show(source, reason, editable)


async def start_operation(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str,
                          source: Message, images: list[FileInput], *, editable: Message | None = None) -> None:
    """Parse, check and queue one operation for the user who sent `source`."""
    d = deps(context)
    language = await language_for(context, source)
    args_text = await _with_defaults(context, operation, args_text, source)
    try:
        args = operation.parse(args_text)
    except StyleMissing:
        group = d.styles.group(operation.style_group)
        await ask(context, source, tr(language, texts.STYLE_PROMPT), editable,
                  keyboards.style_picker(language, operation.name, group), images)
        return
    except ArgumentError as error:
        if await offer_presets(context, operation, args_text, source, images, editable):
            return
        await refuse(context, source, operation, tr(language, texts.USAGE_LINE, reason=error.text,
                                                    usage=tr(language, operation.usage)), editable=editable)
        return
    for image in images:
        if (problem := problem_with(image)) is not None:
            await refuse(context, source, operation, tr(language, problem), args=args, editable=editable)
            return
    if operation.images == 1 and not images:
        await refuse(context, source, operation,
                     tr(language, texts.NEED_IMAGE, title=tr(language, operation.title_noun),
                        usage=tr(language, operation.usage)), args=args,
                     editable=editable)
        return
    if operation.images == 2 and len(images) < 2:
        await wait_for_more(context, operation, args_text, source, images, editable=editable)
        return
    if source.media_group_id and images and operation.most_images > max(operation.images, 1):
        # optional extra images (reference photos) come as an album: the rest of it is on its way
        await collect_album(context, operation, args_text, source, images)
        return
    if editable is not None and await offer_pick(context, operation, args_text, source, images, editable):
        return
    await queue(context, operation, args, source, [image.file_id for image in images[:operation.most_images]],
                editable=editable)


async def ask(context: ContextTypes.DEFAULT_TYPE, source: Message, text: str, editable: Message | None,
              markup: InlineKeyboardMarkup, images: list[FileInput]) -> None:
    """Show a question with buttons (editing the menu being answered), keeping the images it was asked about."""
    picker = await show(source, text, editable, markup)
    if picker is not None and images:
        await remember_picker_images(context, picker.chat_id, picker.message_id, images)


async def offer_pick(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str, source: Message,
                     images: list[FileInput], editable: Message) -> bool:
    """Answering a menu or picker, with an argument left out that the operation offers as buttons (a headshot
    count): offer them; True when offered. A typed command is not asked: its parser's default stands."""
    if operation.pick is None:
        return False
    language = await language_for(context, source)
    markup = keyboards.argument_keyboard(language, keyboards.PICK_PREFIX, operation, operation.pick.offer(args_text))
    if markup is None:
        return False
    await ask(context, source, tr(language, operation.pick.question), editable, markup, images)
    return True


async def offer_presets(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str, source: Message,
                        images: list[FileInput], editable: Message | None) -> bool:
    """No arguments typed, on a photo of known size: offer the operation's presets as buttons; True when offered."""
    if operation.presets is None or args_text.strip() or len(images) != 1:
        return False
    size = presets.photo_size(source)
    language = await language_for(context, source)
    markup = presets.preset_keyboard(language, *size, operation) if size else None
    if markup is None:
        return False
    await ask(context, source, tr(language, texts.PRESET_PICK, title=tr(language, operation.title)), editable, markup,
              images)
    return True


async def _with_defaults(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str,
                         source: Message) -> str:
    """The argument text with the user's defaults (/settings) where they gave none: a style, a default choice."""
    d = deps(context)
    if d.people is None or source.from_user is None or source.sender_chat is not None:
        return args_text
    wants_choice = bool(operation.default_choices) and not args_text.strip()
    if not wants_choice and not operation.lacks_style(args_text):
        return args_text  # nothing a setting could fill in: no settings read
    settings = await person_settings(context, source)
    if wants_choice and (chosen := str(settings.get(argument_setting(operation.name), ""))) in operation.default_choices:
        args_text = chosen
    style = settings.get(style_setting(operation.style_group)) if operation.style_group else None
    if style and d.styles.group(operation.style_group).get(style) and operation.lacks_style(args_text):
        args_text = f"{style} {args_text}".strip()
    return args_text


async def react(source: Message, emoji: str) -> bool:
    """Put a reaction on the user's message; False when Telegram refused it (reactions off in that chat)."""
    try:
        return bool(await source.set_reaction(emoji))
    except TelegramError as error:
        log.debug("could not react in chat %s: %s", source.chat_id, error)
        return False


async def queue(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args: dict, source: Message,
                inputs: list[str], *, editable: Message | None = None, requester: User | None = None) -> bool:
    """Store the job (or say what stops it), then acknowledge it; True when the job was stored.

    The job is stored before anything is sent: an acknowledgement may wait for the chat's Telegram
    limit (the intake lets such a handler finish in the background), and a crash meanwhile must not
    lose the request. A quick operation is acknowledged with a reaction on the user's message (one
    call where a status message is two: sent, then deleted); a slower one, a menu being answered (it
    has to change anyway), a follow-up, or a chat where reactions are off gets a status message,
    which the job is given afterwards — or, when the job ended meanwhile, which is taken away again.
    """
    d = deps(context)
    # a follow-up pressed under the bot's own message is the presser's request, in their language
    language = language_of(requester.language_code) if requester is not None else await language_for(context, source)
    request = _job_request(source, operation, args, inputs, language, requester)
    try:
        outcome = await d.jobs.enqueue(request)
    except UpdateHandledElsewhere:  # another replica took this update over and made its job: it answers
        log.info("a %s job was made from this update in another handling; not making a second", operation.name)
        return False
    except Exception:
        log.exception("could not store a %s job", operation.name)
        await show(source, tr(language, texts.QUEUE_FAILED), editable)
        return False
    if isinstance(outcome, NotEnoughCredits) and outcome.pool_only:
        await show(source, tr(request.language, texts.POOL_ONLY_FOR_CHATS), editable)
        return False
    if isinstance(outcome, NotEnoughCredits):
        can_buy = bool(d.credits and d.credits.policy.packs)
        await show(source, texts.not_enough_credits(request.language, outcome.price, outcome.available,
                                                    outcome.free_per_day, can_buy=can_buy), editable)
        return False
    if isinstance(outcome, QuotaExceeded):
        await show(source, texts.quota_text(outcome.reason, outcome.retry_at, d.clock(), language=language), editable)
        return False
    log.info("job %s: queued %s for chat %s", outcome.id, operation.name, outcome.chat_id)
    # a follow-up replies to the bot's own result: a status message, not a reaction, says it is in hand
    quick = editable is None and requester is None and operation.typical_seconds <= QUICK_JOB_S
    if quick and d.people is not None and not d.people.quick_reaction(await person_settings(context, source)):
        quick = False  # the user chose a status message for quick jobs too (/settings)
    if quick and await react(source, texts.ACK_REACTION):
        return True
    text = texts.queued_text(operation, args, language=language, ahead=await d.jobs.queued_ahead(outcome.id))
    if outcome.credits > 0:
        text = f"{text} · {texts.cost_note(language, outcome.credits)}"
    status = await show(source, text, editable)
    if status is not None and not await d.jobs.attach_status_message(outcome.id, status.message_id):
        await delete_quietly(context.bot, status.chat_id, status.message_id)  # the job ended before its status was out
    return True


async def delete_quietly(bot: Bot, chat_id: int, message_id: int) -> None:
    """Delete one of the bot's messages; one already gone, or too old to delete, is nothing worse for the user."""
    try:
        await bot.delete_message(chat_id, message_id)
    except TelegramError as error:
        log.debug("could not delete message %s: %s", message_id, error)


def conversations(context: ContextTypes.DEFAULT_TYPE) -> Conversations:
    """The conversation state every replica shares (in the database)."""
    store = deps(context).conversations
    if store is None:
        raise RuntimeError("the handlers' dependencies have no conversation store")
    return store


def _pending_data(pending: PendingInputs) -> dict:
    return {"operation": pending.operation, "args_text": pending.args_text, "source": pending.source.to_dict(),
            "file_ids": list(pending.file_ids), "album_id": pending.album_id, "album_items": pending.album_items,
            "started": None if pending.started is None else pending.started.isoformat()}


def _pending_of(data: dict, bot: Bot) -> PendingInputs:
    started = data.get("started")
    return PendingInputs(data["operation"], data["args_text"], Message.de_json(data["source"], bot),
                         list(data["file_ids"]), started=None if started is None else datetime.fromisoformat(started),
                         album_id=data.get("album_id"), album_items=data.get("album_items", 1))


def _keep_pending() -> timedelta:
    # kept past PENDING_FOR, so the user can still be told it ran out
    return PENDING_FOR + PENDING_KEPT_AFTER


async def _load_pending(context: ContextTypes.DEFAULT_TYPE, chat_id: int, user_id: int) -> PendingInputs | None:
    data = await conversations(context).get(chat_id, PENDING_KEY, user_id)
    return None if data is None else _pending_of(data, context.bot)


async def _save_pending(context: ContextTypes.DEFAULT_TYPE, user_id: int, pending: PendingInputs, *,
                        due_in: float | None = None) -> None:
    await conversations(context).put(pending.source.chat_id, PENDING_KEY, user_id, _pending_data(pending),
                                     keep_for=_keep_pending(), due_in=due_in)


async def wait_for_more(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str, source: Message,
                        images: list[FileInput], *, editable: Message | None = None) -> None:
    """Remember a two-image request and ask for what is missing (albums bring the rest by themselves)."""
    if source.media_group_id and images and source.chat.type != ChatType.PRIVATE:
        # privacy mode may keep the album's other photos from the bot: what has not come by the album's
        # quiet time is asked for as a reply (_queue_album)
        await collect_album(context, operation, args_text, source, images)
        return
    user_id = sender_id(source) or 0
    pending = PendingInputs(operation.name, args_text, source, [image.file_id for image in images],
                            started=deps(context).clock())
    await _save_pending(context, user_id, pending)
    if source.media_group_id and images:
        return  # the album's next photo completes the pair
    await _ask_for_next(context, operation, source, have_first=bool(images), editable=editable, hint=True)


async def _ask_for_next(context: ContextTypes.DEFAULT_TYPE, operation: Operation, message: Message, *,
                        have_first: bool, editable: Message | None = None, hint: bool = False) -> None:
    """Ask for a two-image request's next photo (in a group, as a reply to this prompt)."""
    language = await language_for(context, message)
    first, second = (tr(language, name) for name in operation.image_names)
    group = message.chat.type != ChatType.PRIVATE
    if have_first:
        text = tr(language, texts.PAIR_REPLY_SECOND if group else texts.NEED_PAIR_SECOND, first=first, second=second)
    else:
        text = tr(language, texts.PAIR_REPLY_FIRST if group else texts.NEED_PAIR_FIRST,
                  title=tr(language, operation.title_noun), first=first, second=second)
    if hint:
        text = f"{text} {tr(language, texts.PAIR_TIMEOUT_HINT)}"
    if group:
        # privacy mode (Telegram's default) hides a plain photo in a group from the bot: a reply reaches it
        await reply(message, text, ForceReply(selective=True))
    else:
        await show(message, text, editable)


def _expired(context: ContextTypes.DEFAULT_TYPE, pending: PendingInputs) -> bool:
    return pending.started is not None and deps(context).clock() - pending.started > PENDING_FOR


async def take_expired(context: ContextTypes.DEFAULT_TYPE, user_id: int, chat_id: int, language: str) -> str | None:
    """Forget this user's two-image request if its time ran out; the notice to show them, else None."""
    pending = await _load_pending(context, chat_id, user_id)
    if pending is None or not _expired(context, pending):
        return None
    if not await conversations(context).drop(chat_id, PENDING_KEY, user_id):
        return None  # another update of theirs told them already
    operation = deps(context).operations.get(pending.operation)
    if operation is None:
        return None
    return texts.pair_expired(language, tr(language, operation.title_noun).lower(), tr(language, operation.image_names[-1]),
                              max(1, int(PENDING_FOR.total_seconds() // 60)), f"/{operation.name}")


async def still_waiting(context: ContextTypes.DEFAULT_TYPE, user_id: int, chat_id: int, language: str) -> str | None:
    """A reminder of what this user's live two-image request still needs, or None without one."""
    pending = await _load_pending(context, chat_id, user_id)
    return None if pending is None else _still_waiting_text(context, pending, language)


def _still_waiting_text(context: ContextTypes.DEFAULT_TYPE, pending: PendingInputs, language: str) -> str | None:
    if _expired(context, pending):
        return None
    operation = deps(context).operations.get(pending.operation)
    if operation is None:
        return None
    needed = operation.image_names[min(len(pending.file_ids), len(operation.image_names) - 1)]
    return tr(language, texts.PAIR_STILL_WAITING, needed=tr(language, needed), title=tr(language, operation.title_noun).lower())


async def continue_pending(context: ContextTypes.DEFAULT_TYPE, message: Message, images: list[FileInput]) -> bool:
    """Add an image to this user's waiting two-image request, or an item to their album being collected;
    True when the message was used."""
    user_id = sender_id(message) or 0
    chat_id = message.chat_id
    pending = await _load_pending(context, chat_id, user_id)
    if pending is None or _expired(context, pending):
        return False
    d = deps(context)
    operation = d.operations[pending.operation]
    if pending.album_id is not None:
        return await _add_to_album(context, message, user_id, pending, operation, images)
    if not images:
        return False
    if await _told_problem(context, message, pending, images):
        return True
    new_ids = [image.file_id for image in images]

    def add_image(data: dict) -> dict | None:
        data["file_ids"] = [*data["file_ids"], *new_ids]
        return None if _all_there(operation, data["file_ids"]) else data

    before = await conversations(context).change(chat_id, PENDING_KEY, user_id, add_image, keep_for=_keep_pending())
    if before is None or before.get("album_id") is not None:
        return before is not None  # taken meanwhile by another of their updates
    file_ids = [*before["file_ids"], *new_ids]
    if not _all_there(operation, file_ids):
        if not message.media_group_id:
            await _ask_for_next(context, operation, message, have_first=True)
        return True
    pending = _pending_of(before, context.bot)
    args = operation.parse(pending.args_text)
    await queue(context, operation, args, pending.source, file_ids[: operation.images])
    return True


async def _told_problem(context: ContextTypes.DEFAULT_TYPE, message: Message, pending: PendingInputs,
                        images: list[FileInput]) -> bool:
    """Say what is wrong with a file sent for a waiting request (which stays as it is); True when something was."""
    problem = next((problem for image in images if (problem := problem_with(image)) is not None), None)
    if problem is None:
        return False
    language = await language_for(context, message)
    await reply(message, f"{tr(language, problem)}\n{_still_waiting_text(context, pending, language)}")
    return True


async def _add_to_album(context: ContextTypes.DEFAULT_TYPE, message: Message, user_id: int, pending: PendingInputs,
                        operation: Operation, images: list[FileInput]) -> bool:
    """Add an item of the album being collected (a video or a bad file counts as seen, adding no image)."""
    if message.media_group_id != pending.album_id:
        return False
    usable = not any(problem_with(image) for image in images)
    new_ids = [image.file_id for image in images] if usable else []

    def add_item(data: dict) -> dict | None:
        if data.get("album_id") != pending.album_id:
            return data
        data["file_ids"] = [*data["file_ids"], *new_ids]
        data["album_items"] = data.get("album_items", 1) + 1
        return None if _all_there(operation, data["file_ids"]) else data

    # under a lock, and the album's quiet time starts again: whoever collects it sees this item
    before = await conversations(context).change(message.chat_id, PENDING_KEY, user_id, add_item,
                                                 keep_for=_keep_pending(), due_in=ALBUM_QUIET_S)
    if before is None or before.get("album_id") != pending.album_id:
        return False
    if not usable:
        return await _told_problem(context, message, pending, images)
    file_ids = [*before["file_ids"], *new_ids]
    if _all_there(operation, file_ids):  # as outside an album, the second image completes a pair at once
        await queue(context, operation, operation.parse(pending.args_text), pending.source,
                    file_ids[: operation.images])
    return True


def _all_there(operation: Operation, file_ids: list[str]) -> bool:
    """Whether a request has every image its operation takes (one with optional extras waits for its album's end)."""
    return operation.most_images == operation.images and len(file_ids) >= operation.images


async def collect_album(context: ContextTypes.DEFAULT_TYPE, operation: Operation, args_text: str, source: Message,
                        images: list[FileInput]) -> None:
    """Take the rest of the album `source` belongs to, then queue the job once no item came for a moment."""
    user_id = sender_id(source) or 0  # as continue_pending looks it up: an anonymous admin is their sender chat
    pending = PendingInputs(operation.name, args_text, source, [image.file_id for image in images],
                            started=deps(context).clock(), album_id=source.media_group_id)
    # stored before the album's next item is handled; the row is what counts: any replica's sweep (or the
    # task below) queues the album once it is due
    await _save_pending(context, user_id, pending, due_in=ALBUM_QUIET_S)
    context.application.create_task(_collect_album(context, user_id, pending), name=f"album-{source.media_group_id}")


async def _collect_album(context: ContextTypes.DEFAULT_TYPE, user_id: int, pending: PendingInputs) -> None:
    store = conversations(context)
    while True:
        await asyncio.sleep(ALBUM_QUIET_S)
        await queue_due_albums(context.application)
        data = await store.get(pending.source.chat_id, PENDING_KEY, user_id)
        if data is None or data.get("album_id") != pending.album_id:
            return  # queued, replaced or cancelled


async def queue_due_albums(application: Application) -> int:
    """Queue every album whose items stopped coming ALBUM_QUIET_S ago (this replica's or another's); how many."""
    d: Deps = application.bot_data[DEPS_KEY]
    if d.conversations is None:
        return 0
    due = await d.conversations.take_due(PENDING_KEY)
    for row in due:
        context = CallbackContext(application, chat_id=row.chat_id, user_id=int(row.key))
        try:
            await _queue_album(context, int(row.key), _pending_of(row.data, application.bot))
        except Exception:  # one album's failure must not stop the others
            log.exception("could not queue the album of chat %s", row.chat_id)
    return len(due)


async def _queue_album(context: ContextTypes.DEFAULT_TYPE, user_id: int, pending: PendingInputs) -> None:
    operation = deps(context).operations[pending.operation]
    language = await language_for(context, pending.source)
    if len(pending.file_ids) > operation.most_images:
        await refuse(context, pending.source, operation,
                     texts.too_many_images(language, tr(language, operation.title_noun), operation.most_images))
        return
    if len(pending.file_ids) < operation.images:
        await _ask_for_rest(context, user_id, operation, pending, language)
        return
    queued = await queue(context, operation, operation.parse(pending.args_text), pending.source, pending.file_ids)
    if queued and pending.album_items == 1 and pending.source.chat.type != ChatType.PRIVATE:
        # an album has two items at least: privacy mode kept the others from the bot
        await reply(pending.source, tr(language, texts.ALBUM_ONLY_CAPTIONED))


async def _ask_for_rest(context: ContextTypes.DEFAULT_TYPE, user_id: int, operation: Operation,
                        pending: PendingInputs, language: str) -> None:
    """An album in a group brought fewer images than needed (privacy mode kept the others from the bot): wait
    for the rest as any two-image request does, asking for it as a reply, which privacy mode lets through."""
    pending.album_id = None
    await _save_pending(context, user_id, pending)
    first, second = (tr(language, name) for name in operation.image_names)
    text = tr(language, texts.ALBUM_REPLY_REST, first=first, second=second)
    await reply(pending.source, f"{text} {tr(language, texts.PAIR_TIMEOUT_HINT)}", ForceReply(selective=True))


async def drop_pending(context: ContextTypes.DEFAULT_TYPE, user_id: int, chat_id: int) -> bool:
    """Forget a user's waiting two-image request; True if there was one."""
    return await conversations(context).drop(chat_id, PENDING_KEY, user_id)


async def remember_picker_images(context: ContextTypes.DEFAULT_TYPE, chat_id: int, picker_id: int,
                                 images: list[FileInput]) -> None:
    """Keep the images a style picker was shown for: when its button is pressed, the picker's
    reply_to_message (the user's command) comes without the photo that command replied to."""
    await conversations(context).put(chat_id, PICKER_IMAGES_KEY, picker_id,
                                     {"images": [asdict(image) for image in images]}, keep_for=PICKER_KEPT_FOR)


async def picker_images(context: ContextTypes.DEFAULT_TYPE, chat_id: int, picker_id: int) -> list[FileInput]:
    """The images remembered for a style picker (none for a picker without images, or once it expired)."""
    data = await conversations(context).get(chat_id, PICKER_IMAGES_KEY, picker_id)
    return [] if data is None else [FileInput(**image) for image in data["images"]]
