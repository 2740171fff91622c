"""Guest mode (Bot API 10.0): `@bot upscale 2` as a reply to a photo, in any chat the bot is not a member of.

Telegram sends a `guest_message` (the mention, with the replied-to photo in `reply_to_message`) that must be
answered once, soon, with `answerGuestQuery`: the answer is an article with a keyboard (so it becomes an
inline message the bot can edit) saying what is being done. The job is then queued for the caller through
JobService, as a command in their chat with the bot would be (allowlist, limits, credits, language, a row
that survives a restart), with the inline message's id, and the worker edits that message into the result
(bot.tg.inline_delivery). The bot never writes into the chat itself: it is not a member there, and in a
private chat between two people the chat's id is the other person's, the id of their own chat with the bot.

`@bot` alone, or words naming no operation, replying to a photo: the operations that fit it, as buttons on
the answer (the photo is kept, for the caller only, under a token the buttons carry: it is stored before the
answer goes out, so no press can come before it). `@bot <description>`
without a photo: text to image, as /imagine does.
"""

from __future__ import annotations

import contextlib
import logging
import re
import secrets
from datetime import timedelta

from telegram import (
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    InlineQueryResultArticle,
    InputTextMessageContent,
    Message,
    Update,
    User,
)
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler, MessageHandler, filters

from bot.credits.texts import not_enough_credits
from bot.i18n import N_, language_of, render, tr
from bot.jobs.service import JobRequest, NotEnoughCredits, QuotaExceeded
from bot.operations.catalogue import ArgumentError, Operation, ResultKind, StyleMissing
from bot.store.inbox import UpdateHandledElsewhere
from bot.tg import texts
from bot.tg.context import CustomContext, conversations, deps, language_for
from bot.tg.deliverable import can_deliver
from bot.tg.followups import next_operations
from bot.tg.handlers.router import Router
from bot.tg.inputs import FileInput, problem_with
from bot.tg.keyboards import open_bot_keyboard
from bot.waiting import ON_WAIT

log = logging.getLogger(__name__)

#: callback data of an operation button on a guest answer: "gq:<photo token>:<operation>:<argument text>"
PREFIX = "gq"
#: conversations kind of the photo a choice answer was made for (key: the token its buttons carry)
PHOTO_KIND = "guest"
#: the conversation row of those photos has no chat: the token names it
NO_CHAT = 0
#: how long a choice answer's buttons keep working
KEPT_FOR = timedelta(days=1)
#: the one result of every answer
RESULT_ID = "guest"
CALLBACK_MAX_BYTES = 64

WORKING = N_("⏳ {what}…")
CHOOSE = N_("What should I do with this photo?")
NOT_UNDERSTOOD = N_("I don't know how to do that. What should I do with this photo?")
HOW_TO = N_("Reply to a photo with my name and what to do, for example {example}, or write my name and a "
            "description to draw it.")
NOT_A_PHOTO = N_("I can only work on a photo: reply to a photo with my name.")
NEEDS_PHOTO = N_("{title} needs a photo: reply to a photo with my name.")
NOT_YOURS = N_("Only the person who asked can choose.")
START_FIRST = N_("Open a chat with me first (Start), then ask again: only then can I show you the picture here.")
ANSWER_TITLE = N_("AI photo editing")


def _words(message: Message, username: str | None) -> str:
    """What the caller wrote, without the bot's mention."""
    text = message.text or message.caption or ""
    if username:
        text = re.sub(rf"@{re.escape(username)}\b", " ", text, flags=re.IGNORECASE)
    return " ".join(text.split())


def _image(message: Message | None) -> FileInput | None:
    """The photo (or image file) a message carries; stickers, videos and the rest are not photos here."""
    if message is None:
        return None
    if message.photo:
        largest = message.photo[-1]
        return FileInput(largest.file_id, largest.file_size, is_document=False, mime="image/jpeg")
    document = message.document
    if document is not None and (document.mime_type or "").startswith("image/"):
        return FileInput(document.file_id, document.file_size, is_document=True, mime=document.mime_type)
    return None


def _fits(operation: Operation) -> bool:
    """Whether a guest answer can run the operation: one photo in, a picture out (an inline message holds a
    picture; a video made for it could not be shown, and would cost the service a video task all the same)."""
    return operation.images == 1 and operation.result is not ResultKind.VIDEO


def _named(operations: dict[str, Operation], words: str, language: str) -> tuple[Operation | None, str]:
    """The one-photo operation the first word names (its command, or its title in English or the caller's
    language), and the rest of the words as its argument text."""
    first, _, rest = words.partition(" ")
    first = first.lstrip("/").lower()
    for operation in operations.values():
        names = {operation.name, tr("en", operation.title).lower(), tr(language, operation.title).lower()}
        if _fits(operation) and first and first in names:
            return operation, rest
    return None, words


def example(operations: dict[str, Operation], username: str | None) -> str:
    """A mention to show as an example: the bot's name and the first one-tap operation on a photo."""
    one_tap = next_operations(operations)
    return f"@{username} {one_tap[0][0].name} {one_tap[0][2]}".strip() if one_tap else f"@{username}"


def _text_operation(operations: dict[str, Operation]) -> Operation | None:
    """What a description without a photo runs: the catalogue's text-to-image operation for inline mode."""
    return next((operation for operation in operations.values() if operation.inline), None)


def _parse(operation: Operation, text: str, default_style: str | None) -> dict:
    """The arguments; a style the operation needs and nobody typed is its group's default."""
    try:
        return operation.parse(text)
    except StyleMissing:
        if default_style is None:
            raise
        return operation.parse(f"{default_style} {text}")


def _article(text: str, language: str, markup: InlineKeyboardMarkup) -> InlineQueryResultArticle:
    return InlineQueryResultArticle(RESULT_ID, tr(language, ANSWER_TITLE), InputTextMessageContent(text),
                                    reply_markup=markup)


async def on_guest_message(update: Update, context: CustomContext) -> None:
    """A mention in a chat the bot is not in: answer once, at once, then queue the job or say why not."""
    message, d = update.guest_message, deps(context)
    # the answer is due at once: it speaks the caller's app language, from the update itself; their /language
    # choice (a database read, which took p95 from 0.2 to 1.3 s in bench.perf.guest) is read for the job after it
    language = language_of(message.from_user.language_code if message.from_user else None)
    keyboard = open_bot_keyboard(language, context.bot.username)
    how_to = tr(language, HOW_TO, example=example(d.operations, context.bot.username))
    words = _words(message, context.bot.username)
    photo = _image(message) or _image(message.reply_to_message)
    reply = message.reply_to_message
    if photo is None and reply is not None and reply.effective_attachment is not None:
        await _answer(message, tr(language, NOT_A_PHOTO), language, keyboard)
        return
    operation, rest = _named(d.operations, words, language)
    if photo is None:
        if not words:
            await _answer(message, how_to, language, keyboard)
            return
        if operation is not None:
            await _answer(message, tr(language, NEEDS_PHOTO, title=tr(language, operation.title_noun)), language,
                          keyboard)
            return
        operation, rest = _text_operation(d.operations), words
        if operation is None:
            await _answer(message, how_to, language, keyboard)
            return
    elif operation is None:
        await _offer(context, message, photo, language, tr(language, NOT_UNDERSTOOD if words else CHOOSE))
        return
    if photo is not None and (problem := problem_with(photo)) is not None:
        await _answer(message, tr(language, problem), language, keyboard)
        return
    try:
        args = _parse(operation, rest, _default_style(context, operation))
    except ArgumentError as error:
        await _answer(message, tr(language, texts.USAGE_LINE, reason=error.text, usage=tr(language, operation.usage)),
                      language, keyboard)
        return
    inline_message_id = await _answer(message, _working(operation, args, language), language, keyboard)
    if inline_message_id is None:
        return
    # answered: Telegram takes no second answer, so handling this update again after a crash could not help
    # either; the rest lets go of the update and its handler slot, which the next mentions' answers need
    on_wait = ON_WAIT.get()
    async with on_wait() if on_wait is not None else contextlib.nullcontext():
        await _queue(context, message.from_user, await language_for(context, update=update), operation, args,
                     [photo.file_id] if photo else [], inline_message_id)


def _default_style(context: CustomContext, operation: Operation) -> str | None:
    """The default style of the operation's style group, for a description or a photo nobody styled."""
    if operation.style_group is None:
        return None
    group = deps(context).styles.group(operation.style_group)
    names = group.names()
    return group.default if group.default in names else (names[0] if names else None)


def _working(operation: Operation, args: dict, language: str) -> str:
    return tr(language, WORKING, what=render(language, operation.describe(args)))


async def _answer(message: Message, text: str, language: str, markup: InlineKeyboardMarkup) -> str | None:
    """Answer the guest query (once: Telegram takes no second answer); the inline message id, None if refused."""
    try:
        sent = await message.get_bot().answer_guest_query(message.guest_query_id, _article(text, language, markup))
    except TelegramError as error:  # too late, or answered already (a redelivered update): nothing to tell anyone
        log.info("guest query not answered: %s", error)
        return None
    return sent.inline_message_id


async def _offer(context: CustomContext, message: Message, photo: FileInput, language: str,
                 text: str) -> None:
    """The operations that fit one photo, as buttons on the answer; the photo is kept for the caller's press."""
    token = secrets.token_urlsafe(6)
    buttons = [InlineKeyboardButton(tr(language, label), callback_data=data)
               for operation, label, argument in next_operations(deps(context).operations)
               if _fits(operation) and len((data := f"{PREFIX}:{token}:{operation.name}:{argument}").encode()) <= CALLBACK_MAX_BYTES]
    rows = [buttons[start:start + 2] for start in range(0, len(buttons), 2)]
    rows.append(open_bot_keyboard(language, context.bot.username).inline_keyboard[0])
    # kept before the answer goes out: a press can come as soon as the buttons are shown
    await conversations(context).put(NO_CHAT, PHOTO_KIND, token,
                                     {"user": message.from_user.id, "file_id": photo.file_id,
                                      "size": photo.size, "is_document": photo.is_document, "mime": photo.mime},
                                     keep_for=KEPT_FOR)
    await _answer(message, text, language, InlineKeyboardMarkup(rows))


async def on_choice(update: Update, context: CustomContext) -> None:
    """An operation pressed on a guest answer: the caller's press runs it in place; anyone else's is refused."""
    query, d = update.callback_query, deps(context)
    language = await language_for(context, update=update)
    _, token, name, argument = (query.data or "").split(":", 3) if (query.data or "").count(":") >= 3 else ("",) * 4
    operation = d.operations.get(name)
    if operation is not None and not _fits(operation):  # offered by answers made before this check
        operation = None
    key = query.inline_message_id or ""
    kept = await conversations(context).get(NO_CHAT, PHOTO_KIND, token) if token and key else None
    if kept is not None and kept["user"] != query.from_user.id:
        await _answer_press(query, tr(language, NOT_YOURS), alert=True)
        return
    # the first press takes the photo (a double tap, or a second replica, finds none)
    kept = await conversations(context).pop(NO_CHAT, PHOTO_KIND, token) if kept is not None else None
    if kept is None or operation is None:  # a day old, or pressed already
        await _answer_press(query, tr(language, texts.MENU_EXPIRED), alert=True)
        return
    await _answer_press(query, None)
    try:
        args = _parse(operation, argument, _default_style(context, operation))
    except ArgumentError as error:
        await _edit(context, key, tr(language, texts.USAGE_LINE, reason=error.text,
                                     usage=tr(language, operation.usage)), language)
        return
    await _edit(context, key, _working(operation, args, language), language)
    await _queue(context, query.from_user, language, operation, args, [kept["file_id"]], key)


async def _answer_press(query, text: str | None, *, alert: bool = False) -> None:
    try:
        await query.answer(text, show_alert=alert)
    except TelegramError as error:
        log.debug("guest press not answered: %s", error)


async def _queue(context: CustomContext, user: User, language: str, operation: Operation, args: dict,
                 inputs: list[str], inline_message_id: str) -> None:
    """Queue the caller's job shown in the inline message, or turn the message into the reason it cannot run."""
    d = deps(context)
    if not await can_deliver(context, user.id):
        await _edit(context, inline_message_id, tr(language, START_FIRST), language)
        return
    request = JobRequest(chat_id=user.id, chat_type="private", chat_title=None, user_id=user.id,
                         username=user.username, first_name=user.first_name, reply_to_message_id=None,
                         operation=operation.name, args=args, inputs=inputs, language=language,
                         inline_message_id=inline_message_id)
    try:
        outcome = await d.jobs.enqueue(request)
    except UpdateHandledElsewhere:  # another replica handled this update and made its job
        return
    if isinstance(outcome, NotEnoughCredits):
        can_buy = bool(d.credits and d.credits.policy.packs)
        await _edit(context, inline_message_id, not_enough_credits(
            language, outcome.price, outcome.available, outcome.free_per_day, can_buy=can_buy), language)
    elif isinstance(outcome, QuotaExceeded):
        await _edit(context, inline_message_id, texts.quota_text(outcome.reason, outcome.retry_at, d.clock(),
                                                                  language=language), language)
    else:
        log.info("job %s: queued %s from guest mode for user %s", outcome.id, operation.name, user.id)


async def _edit(context: CustomContext, inline_message_id: str, text: str, language: str) -> None:
    """Turn the answer into a short text with a button to open the bot; a failure is only logged."""
    try:
        await context.bot.edit_message_text(text, inline_message_id=inline_message_id,
                                            reply_markup=open_bot_keyboard(language, context.bot.username))
    except TelegramError as error:
        log.info("guest answer not edited: %s", error)


async def refuse(update: Update) -> None:
    """A caller outside the allowlists: the answer says the bot is private, in their app's language."""
    message = update.guest_message
    language = message.from_user.language_code if message.from_user else None
    language = language or "en"
    await _answer(message, tr(language, texts.NOT_ALLOWED), language,
                  open_bot_keyboard(language, message.get_bot().username))


def is_guest(update: Update) -> bool:
    """Whether an update is a guest mention (never to be answered in its chat)."""
    return update.guest_message is not None


def register(application: Application, router: Router) -> None:
    """Answer guest mentions, and the operation buttons of guest answers (no commands for the router)."""
    application.add_handler(MessageHandler(filters.UpdateType.GUEST_MESSAGE, on_guest_message))
    application.add_handler(CallbackQueryHandler(on_choice, pattern=rf"^{PREFIX}:"))
