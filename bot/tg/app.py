"""The python-telegram-bot Application: built from settings, with every handler registered."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from telegram import (
    BotCommand,
    BotCommandScopeAllGroupChats,
    BotCommandScopeAllPrivateChats,
    BotCommandScopeChat,
    BotCommandScopeDefault,
    Update,
)
from telegram.error import TelegramError
from telegram.ext import Application, ApplicationBuilder

from bot.chats.stored_inputs import StoredInputs
from bot.i18n import DEFAULT_LANGUAGE, LANGUAGES, tr
from bot.media import MediaLinks
from bot.metrics import Metrics
from bot.tg import followups, texts
from bot.tg.answers import AnsweredQueries
from bot.tg.context import CONTEXT_TYPES, Deps
from bot.tg.handlers import (
    credits,
    groups,
    guest,
    help,
    history,
    inline,
    jobs,
    language,
    menu,
    messages,
    operations,
    payments,
    plan_payments,
    settings,
    subscription,
)
from bot.tg.handlers import followups as followup_buttons
from bot.tg.handlers.router import Router
from bot.tg.notifier import TelegramNotifier
from bot.tg.ratelimit import TelegramRateLimiter
from bot.tg.request import AiohttpRequest

log = logging.getLogger(__name__)

#: connections to the Bot API at once (PTB's default)
TELEGRAM_CONNECTIONS = 256

ALLOWED_UPDATES = [Update.MESSAGE, Update.EDITED_MESSAGE, Update.CALLBACK_QUERY, Update.CHANNEL_POST,
                   Update.MY_CHAT_MEMBER, Update.PRE_CHECKOUT_QUERY, Update.INLINE_QUERY, Update.CHOSEN_INLINE_RESULT,
                   Update.GUEST_MESSAGE]


#: every handler module, each registered by its register(application, router), in the order their handlers are
#: tried and their commands fill the menu: payments (the plan's, then the packs') before the message handler (a
#: payment is a message without text), the menu's catch-all button handler last
HANDLER_MODULES = (plan_payments, payments, messages, operations, jobs, language, help, credits, subscription,
                   followup_buttons, inline, guest, history, groups, settings, menu)


def build_application(token: str, api_url: str, deps: Deps, *, rate_limit: bool = True,
                      read_timeout: float = 30.0, metrics: Metrics | None = None) -> Application:
    """An Application talking to `{api_url}/bot<token>/…` (Telegram's, a local Bot API server, or a fake)."""
    api_url = api_url.rstrip("/")
    request = AiohttpRequest(connections=TELEGRAM_CONNECTIONS, read_timeout=read_timeout, media_write_timeout=60.0)
    # the long poll gets a connection of its own, as PTB's default does
    updates_request = AiohttpRequest(connections=1, read_timeout=read_timeout)
    request.metrics = updates_request.metrics = metrics
    answered = request.answered = AnsweredQueries()
    builder = (ApplicationBuilder().token(token).context_types(CONTEXT_TYPES).base_url(f"{api_url}/bot")
               .base_file_url(f"{api_url}/file/bot").request(request).get_updates_request(updates_request)
               .concurrent_updates(16))
    if rate_limit:
        # stays under Telegram's flood limits (per bot, private chat and group) and waits out any 429
        builder = builder.rate_limiter(TelegramRateLimiter(max_retries=3))
    application = builder.build()
    router = Router()
    shared = application.bot_data  # PTB makes it (ContextTypes) with the application: given here, once
    shared.deps, shared.router, shared.answered = deps, router, answered
    for module in HANDLER_MODULES:
        module.register(application, router)
    return application


def _menu(descriptions: Mapping[str, str], language: str) -> list[BotCommand]:
    return [BotCommand(name, tr(language, text)[:256]) for name, text in descriptions.items()]


async def announce_commands(application: Application) -> None:
    """Register the command menus and the bot's profile texts, in every language (a failure is logged: the bot
    works without them).

    Menus per scope: the default, private chats and groups get everyone's commands; each admin's private chat
    gets theirs too. Per language: English is the default (no language_code), every other language its own, so Telegram
    shows each person the menu in their app's language.
    """
    router = application.bot_data.router
    admins = sorted(application.bot_data.deps.access.admins)
    bot = application.bot
    calls: list[Awaitable[None]] = []
    for code in LANGUAGES:
        language_code = None if code == DEFAULT_LANGUAGE else code
        everyone = _menu(router.descriptions, code)
        scopes = [(BotCommandScopeDefault(), everyone), (BotCommandScopeAllPrivateChats(), everyone),
                  (BotCommandScopeAllGroupChats(), everyone)]
        if router.admin_descriptions:
            scopes += [(BotCommandScopeChat(admin), everyone + _menu(router.admin_descriptions, code))
                       for admin in admins]
        calls += [_registered(code, bot.set_my_commands(commands, scope=scope, language_code=language_code))
                  for scope, commands in scopes]
        calls += [_registered(code, bot.set_my_description(tr(code, texts.BOT_DESCRIPTION)[:512],
                                                           language_code=language_code)),
                  _registered(code, bot.set_my_short_description(tr(code, texts.BOT_SHORT_DESCRIPTION)[:120],
                                                                 language_code=language_code))]
    # all at once: a start-up (every replica's) waits one round trip instead of dozens in a row
    await asyncio.gather(*calls)


async def _registered(language: str, call: Awaitable[object]) -> None:
    """Await one registration call; its failure is logged alone (an admin who never opened a chat with the bot
    fails only their menu)."""
    try:
        await call
    except TelegramError as error:
        log.warning("could not register a command menu or description in %s: %s", language, error)


def notifier_for(application: Application, *, sandbox: Callable[[], bool] = lambda: False,
                 stored: StoredInputs | None = None, media: MediaLinks | None = None) -> TelegramNotifier:
    """The worker's notifier, sending through this application's bot (and its rate limiter); `media` links
    inline-mode results for a person who never started the bot."""
    d = application.bot_data.deps
    application.bot_data.media_links = media is not None  # what inline mode asks before it makes a job
    return TelegramNotifier(application.bot, sandbox=sandbox, stored=stored, media=media,
                            keyboard=lambda job, operation, results: followups.keyboard(
                                job, operation, results, d.operations, d.credits.policy.price, d.app_links,
                                application.bot.username))


def admin_alarm(application: Application, admins: frozenset[int]) -> Callable[[str], Awaitable[None]]:
    """Sends BOT_ADMINS the message about a service account problem (bot.jobs.alarm), each in English."""
    problems = {"no_credits": texts.ADMIN_NO_CREDITS, "unauthorized": texts.ADMIN_KEY_REFUSED}

    async def send(problem: str) -> None:
        text = tr("en", problems[problem])
        told = 0
        for admin_id in sorted(admins):
            try:
                await application.bot.send_message(admin_id, text)
                told += 1
            except TelegramError as error:  # an admin who never started the bot cannot be written to
                log.warning("could not tell admin %s about %s: %s", admin_id, problem, error)
        if not told:
            raise RuntimeError(f"no admin could be told about {problem}")
    return send
