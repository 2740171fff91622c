"""/start and /help."""

from __future__ import annotations

from telegram import Update
from telegram.ext import Application, ContextTypes

from bot.i18n import tr
from bot.tg import texts
from bot.tg.commands import CommandCall
from bot.tg.context import deps, language_for
from bot.tg.handlers.router import Router
from bot.tg.pairs import wait_for_more
from bot.tg.replies import reply
from bot.tg.start import start_operation


async def show_help(update: Update, context: ContextTypes.DEFAULT_TYPE, call: CommandCall) -> None:
    """Explain what the bot does, listing the catalogue's operations; `/start <operation>` (a deep link) opens its flow."""
    d, message = deps(context), update.effective_message
    language = await language_for(context, update=update)
    operation = d.operations.get(call.args.strip().lower()) if call.name == "start" and call.args else None
    if operation is None:
        await reply(message, texts.help_text(d.operations.values(), language=language))
        return
    title, usage = tr(language, operation.title), tr(language, operation.usage)
    if operation.images == 2:
        await wait_for_more(context, operation, "", message, [])
    elif operation.style_group is not None:
        await start_operation(context, operation, "", message, [])  # the style picker comes first
    elif operation.images == 0:
        await reply(message, tr(language, texts.DEEP_LINK_TEXT, title=title, usage=usage))
    else:
        await reply(message, tr(language, texts.DEEP_LINK_PHOTO, title=title, usage=usage))


def register(application: Application, router: Router) -> None:
    """/start and /help."""
    router.add("start", show_help)
    router.add("help", show_help, texts.HELP_COMMAND)
