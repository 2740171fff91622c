"""/start and /help."""

from __future__ import annotations

from telegram import Update
from telegram.ext import ContextTypes

from bot.tg import texts
from bot.tg.commands import CommandCall
from bot.tg.context import deps, language_for
from bot.tg.flow import reply
from bot.tg.handlers.router import Router


async def show_help(update: Update, context: ContextTypes.DEFAULT_TYPE, call: CommandCall) -> None:
    """Explain what the bot does, listing the catalogue's operations."""
    language = await language_for(context, update=update)
    await reply(update.effective_message, texts.help_text(deps(context).operations.values(), language=language))


def register(router: Router) -> None:
    router.add("start", show_help)
    router.add("help", show_help, texts.HELP_COMMAND)
