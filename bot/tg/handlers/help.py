"""/start and /help."""

from __future__ import annotations

from telegram import Update
from telegram.ext import ContextTypes

from bot.i18n import N_, tr
from bot.tg import texts
from bot.tg.commands import CommandCall
from bot.tg.context import deps, language_for
from bot.tg.flow import reply, start_operation, wait_for_more
from bot.tg.handlers.router import Router

INLINE_HELP = N_("In any chat, type {bot} and a space to share your pictures, or {bot} and a description to "
                 "draw one right there.")


async def show_help(update: Update, context: ContextTypes.DEFAULT_TYPE, call: CommandCall) -> None:
    """Explain what the bot does, listing the catalogue's operations; `/start <operation>` (a deep link) opens its flow."""
    d, message = deps(context), update.effective_message
    language = await language_for(context, update=update)
    operation = d.operations.get(call.args.strip().lower()) if call.name == "start" and call.args else None
    if operation is None:
        inline = tr(language, INLINE_HELP, bot=f"@{context.bot.username}")
        await reply(message, f"{texts.help_text(d.operations.values(), language=language)}\n\n{inline}")
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


def register(router: Router) -> None:
    router.add("start", show_help)
    router.add("help", show_help, texts.HELP_COMMAND)
