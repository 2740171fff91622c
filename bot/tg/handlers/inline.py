"""Inline mode: `@bot` in any chat shares the person's own results; `@bot <description>` draws one in place.

An empty query lists the person's delivered pictures (newest first, albums as their pictures) as cached
photos, by the Telegram file ids the bot already holds; words that name an operation or a style filter
them. A description also offers "Generate: …" results: each is a text message carrying a keyboard (so
Telegram gives it an inline_message_id); choosing one queues a text-to-image job through JobService,
like the typed /imagine, and the worker edits that message into the picture (bot.tg.inline_delivery).

Answering costs one bounded database read and never a service call: typing makes no jobs.
"""

from __future__ import annotations

import asyncio
import logging

from telegram import (
    InlineKeyboardMarkup,
    InlineQueryResultArticle,
    InlineQueryResultCachedDocument,
    InlineQueryResultCachedPhoto,
    InlineQueryResultCachedVideo,
    InlineQueryResultsButton,
    InputTextMessageContent,
    Update,
)
from telegram.error import TelegramError
from telegram.ext import Application, ChosenInlineResultHandler, InlineQueryHandler

from bot.credits.texts import not_enough_credits
from bot.i18n import N_, tr
from bot.jobs.service import JobRequest, NotEnoughCredits, QuotaExceeded
from bot.operations.catalogue import ArgumentError, Operation, ResultKind
from bot.store import JobRecord
from bot.tg import texts
from bot.tg.context import CustomContext, Deps, deps, language_for
from bot.tg.deliverable import can_deliver
from bot.tg.handlers.router import Router
from bot.tg.keyboards import START_PARAMETER, open_bot_keyboard

log = logging.getLogger(__name__)

#: Telegram shows at most 50 results per answer
PAGE = 50
#: delivered jobs looked at for one answer (a bound on the read, whatever the person's history)
SCANNED = 300
#: seconds Telegram may cache an answer: short, since a new result should show soon
CACHE_S = 5
#: the database read must leave time to answer: Telegram drops answers after about 10 s
READ_BUDGET_S = 1.5
#: styles offered beside the plain "Generate"
STYLES_OFFERED = 3
#: a Generate result's id: "g:<style>"
GENERATE = "g"

GENERATE_TITLE = N_("Generate: {description}")
GENERATE_STYLED = N_("Generate ({style}): {description}")
GENERATE_HINT = N_("Draws the picture right here")
STARTING = N_("🎨 {description}\n⏳ Starting…")
PRIVATE_BUTTON = N_("This bot is private: open it")
NO_RESULTS_BUTTON = N_("No pictures yet: make one in the bot")
OPEN_FIRST = N_("I can only draw here for someone who has a chat with me. Open the bot, press Start, then choose "
                "again.")


def _generating(d: Deps) -> Operation | None:
    """The operation "Generate" queues: the catalogue's entry marked for inline mode."""
    return next((operation for operation in d.operations.values() if operation.inline), None)


class FeedbackWatch:
    """Warns once when inline queries arrive but no chosen result ever does (inline feedback is off)."""

    #: queries seen without a chosen result before the warning
    QUERIES = 20

    def __init__(self) -> None:
        self.queries = 0
        self.chosen = 0
        self.warned = False

    def saw_query(self) -> None:
        """Count an inline query; warn once when many came and no chosen result ever did."""
        self.queries += 1
        if not self.warned and not self.chosen and self.queries >= self.QUERIES:
            self.warned = True
            log.warning("%d inline queries but no chosen inline result: turn inline feedback on in BotFather "
                        "(/setinlinefeedback) or \"Generate\" in inline mode does nothing", self.queries)

    def saw_chosen(self) -> None:
        """Count a chosen result: inline feedback is on."""
        self.chosen += 1


def _watch(context: CustomContext) -> FeedbackWatch:
    return context.bot_data.feedback


def _names(job: JobRecord, operations: dict[str, Operation], language: str) -> set[str]:
    """The words a query may use to find this result: its operation's name and title, its style."""
    names = {job.operation}
    operation = operations.get(job.operation)
    if operation is not None:
        names |= {tr(language, operation.title).lower(), tr("en", operation.title).lower()}
    for key in ("style", "model"):
        if isinstance(job.args.get(key), str):
            names.add(job.args[key].lower())
    return names


def _matches(words: list[str], names: set[str]) -> bool:
    return all(any(name.startswith(word) or word in name.split() for name in names) for word in words)


async def _shared(d: Deps, user_id: int, words: list[str], language: str) -> list[tuple[JobRecord, int]]:
    """The person's delivered pictures (job, index in its files), newest first, those the words name."""
    jobs = await d.people.delivered(user_id, limit=SCANNED)
    return [(job, index) for job in jobs if not words or _matches(words, _names(job, d.operations, language))
            for index in range(len(job.result_files))]


def _shared_result(job: JobRecord, index: int, operations: dict[str, Operation],
                   language: str) -> InlineQueryResultCachedPhoto | InlineQueryResultCachedDocument \
        | InlineQueryResultCachedVideo:
    """One delivered result as a cached result: a photo, a document for a PNG file, a video as a video."""
    file = job.result_files[index]
    result_id = f"r{job.id}.{index}"
    operation = operations.get(job.operation)
    title = tr(language, operation.title) if operation else job.operation
    if file.get("kind") == "document":
        return InlineQueryResultCachedDocument(result_id, title, file["id"])
    if file.get("kind") == ResultKind.VIDEO:
        return InlineQueryResultCachedVideo(result_id, file["id"], title)
    return InlineQueryResultCachedPhoto(result_id, file["id"])


def _offers(d: Deps, language: str, description: str, username: str | None) -> list[InlineQueryResultArticle]:
    """The "Generate" results for a description: the default style first, then a few others."""
    operation = _generating(d)
    if operation is None or operation.style_group is None:
        return []
    group = d.styles.group(operation.style_group)
    names = group.names()
    if not names:
        return []
    default = group.default if group.default in names else names[0]
    try:
        operation.parse(f"{default} {description}")
    except ArgumentError:
        return []  # too long, or nothing to draw: no offer beats one that fails when chosen
    keyboard = open_bot_keyboard(language, username)
    text = InputTextMessageContent(tr(language, STARTING, description=description))
    offers = [InlineQueryResultArticle(f"{GENERATE}:{default}", tr(language, GENERATE_TITLE, description=description),
                                       text, reply_markup=keyboard, description=tr(language, GENERATE_HINT))]
    for style in [name for name in names if name != default][:STYLES_OFFERED]:
        offers.append(InlineQueryResultArticle(
            f"{GENERATE}:{style}", tr(language, GENERATE_STYLED, style=group.label(style), description=description), text,
            reply_markup=keyboard, description=tr(language, GENERATE_HINT)))
    return offers


async def on_inline_query(update: Update, context: CustomContext) -> None:
    """Answer an inline query at once: the person's results (filtered), and Generate offers for a description."""
    query, d = update.inline_query, deps(context)
    _watch(context).saw_query()
    language = await language_for(context, update=update)
    text = query.query.strip()
    # the offset is ours, but a client may send anything: "²" is a digit to isdigit() and not to int()
    start = int(query.offset) if query.offset.isascii() and query.offset.isdigit() and len(query.offset) <= 6 else 0
    offers = _offers(d, language, text, context.bot.username) if text and start == 0 else []
    try:
        shared = await asyncio.wait_for(_shared(d, query.from_user.id, text.lower().split(), language), READ_BUDGET_S)
    except TimeoutError:
        log.info("inline query: the history read took too long; answering without it")
        shared = []
    room = PAGE - len(offers)
    page = shared[start:start + room]
    following = start + len(page)
    results = offers + [_shared_result(job, index, d.operations, language) for job, index in page]
    button = None
    if not results:
        button = InlineQueryResultsButton(tr(language, NO_RESULTS_BUTTON), start_parameter=START_PARAMETER)
    try:
        await query.answer(results, cache_time=CACHE_S, is_personal=True, button=button,
                           next_offset=str(following) if following < len(shared) else "")
    except TelegramError as error:  # too late, or the person typed on: nothing to tell anyone
        log.info("inline query not answered: %s", error)


async def refuse_query(update: Update) -> None:
    """A refused person's inline query: no results, only a button that opens the bot (which tells them why)."""
    user = update.inline_query.from_user
    language = user.language_code or "en"
    await update.inline_query.answer([], cache_time=CACHE_S, is_personal=True, button=InlineQueryResultsButton(
        tr(language, PRIVATE_BUTTON), start_parameter=START_PARAMETER))


async def refuse_chosen(update: Update) -> None:
    """A refused person chose a result (it was listed before the allowlist changed): say the bot is private."""
    chosen = update.chosen_inline_result
    if chosen.inline_message_id is None:
        return
    language = chosen.from_user.language_code or "en"
    await chosen.get_bot().edit_message_text(tr(language, texts.NOT_ALLOWED), inline_message_id=chosen.inline_message_id)


async def on_chosen(update: Update, context: CustomContext) -> None:
    """A Generate result was sent: queue its job for the person, shown in and delivered to the inline message."""
    chosen, d = update.chosen_inline_result, deps(context)
    _watch(context).saw_chosen()
    kind, _, style = chosen.result_id.partition(":")
    operation = _generating(d)
    if kind != GENERATE or operation is None:
        return  # a shared picture: nothing more to do
    if chosen.inline_message_id is None:
        log.warning("a chosen Generate result without an inline_message_id: its keyboard was lost")
        return
    user, language = chosen.from_user, await language_for(context, update=update)
    try:
        args = operation.parse(f"{style} {chosen.query.strip()}")
    except ArgumentError as error:
        await _edit(context, chosen.inline_message_id, tr(language, error.text))
        return
    if not await can_deliver(context, user.id):  # before the job: no service task for a result that cannot arrive
        await _edit(context, chosen.inline_message_id, tr(language, OPEN_FIRST),
                    open_bot_keyboard(language, context.bot.username))
        return
    request = JobRequest(chat_id=user.id, chat_type="private", chat_title=None, user_id=user.id,
                         username=user.username, first_name=user.first_name, reply_to_message_id=None,
                         operation=operation.name, args=args, inputs=[], language=language,
                         inline_message_id=chosen.inline_message_id)
    outcome = await d.jobs.enqueue(request)
    if isinstance(outcome, NotEnoughCredits):
        can_buy = bool(d.credits and d.credits.policy.on_sale)
        await _edit(context, chosen.inline_message_id, not_enough_credits(
            language, outcome.price, outcome.available, outcome.free_per_day, can_buy=can_buy,
            free_gone=outcome.free_gone))
    elif isinstance(outcome, QuotaExceeded):
        await _edit(context, chosen.inline_message_id,
                    texts.quota_text(outcome.reason, outcome.retry_at, d.clock(), language=language))
    else:
        log.info("job %s: queued %s from inline mode for user %s", outcome.id, operation.name, user.id)


async def _edit(context: CustomContext, inline_message_id: str, text: str,
                keyboard: InlineKeyboardMarkup | None = None) -> None:
    """Turn the inline message into a short text (a refusal); a failure is logged: nothing else can tell them."""
    try:
        await context.bot.edit_message_text(text, inline_message_id=inline_message_id, reply_markup=keyboard)
    except TelegramError as error:
        log.info("inline message not edited: %s", error)


def register(application: Application, router: Router) -> None:
    """Answer inline queries and chosen inline results (no commands for the router)."""
    application.bot_data.feedback = FeedbackWatch()
    application.add_handler(InlineQueryHandler(on_inline_query))
    application.add_handler(ChosenInlineResultHandler(on_chosen))
