"""/balance, for the bot's admins."""

from __future__ import annotations

import logging

from telegram import Update
from telegram.ext import ContextTypes

from bot.aiart import AiartError
from bot.i18n import tr
from bot.tg import texts
from bot.tg.commands import CommandCall
from bot.tg.context import deps, language_for
from bot.tg.flow import reply
from bot.tg.handlers.router import Router

log = logging.getLogger(__name__)


async def show_balance(update: Update, context: ContextTypes.DEFAULT_TYPE, call: CommandCall) -> None:
    """The service account's token balance."""
    d = deps(context)
    user = update.effective_user
    language = await language_for(context, update=update)
    if user is None or user.id not in d.access.admins:
        await reply(update.effective_message, tr(language, texts.ADMINS_ONLY))
        return
    try:
        credits = await d.client.credits()
    except AiartError as error:
        log.warning("balance query failed: %r", error)
        await reply(update.effective_message, tr(language, texts.BALANCE_FAILED))
        return
    await reply(update.effective_message, texts.balance_text(credits.total, credits.remaining, language=language))


def register(router: Router) -> None:
    router.add("balance", show_balance, texts.BALANCE_COMMAND, admins_only=True)
