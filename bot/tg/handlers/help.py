"""/start and /help."""

from __future__ import annotations

from telegram import Message, Update
from telegram.constants import ChatType
from telegram.ext import Application

from bot.i18n import N_, tr
from bot.tg import miniapp, texts
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext, deps, language_for
from bot.tg.handlers import guest
from bot.tg.handlers.router import Router
from bot.tg.pairs import wait_for_more
from bot.tg.replies import reply
from bot.tg.start import start_operation

INLINE_HELP = N_("In any chat, type {bot} and a space to share your pictures, or {bot} and a description to "
                 "draw one right there.")
GUEST_HELP = N_("In a chat I am not in, reply to a photo with {example} (or another operation): the result "
                "appears right there.")
GUEST_HELP_OFF = N_("Guest mode is off: turn it on in @BotFather (your bot → Mini App → Guest Mode) so people can "
                    "reply to a photo with {bot} in any chat.")


async def show_help(update: Update, context: CustomContext, call: CommandCall) -> None:
    """Explain what the bot does, listing the command menu's commands; `/start <operation>` (a deep link) opens its flow."""
    d, message = deps(context), update.effective_message
    language = await language_for(context, update=update)
    private = message.chat.type == ChatType.PRIVATE
    if call.name == "start" and d.app_links is not None and private:
        # the menu button opens My results, labelled in the person's language
        await miniapp.set_menu_button(context.bot, d.app_links, message.chat_id, language)
    if call.name == "start" and private and miniapp.is_deep_link(call.args):
        await _open_app(context, message, call.args, language)
        return
    operation = d.operations.get(call.args.strip().lower()) if call.name == "start" and call.args else None
    if operation is None:
        inline = tr(language, INLINE_HELP, bot=f"@{context.bot.username}")
        guest_help = _guest_help(context, language, admin=update.effective_user is not None
                                 and update.effective_user.id in d.access.admins)
        commands = texts.help_text(context.bot_data.router.commands(), language=language)
        await reply(message, "\n\n".join(part for part in (commands, inline, guest_help) if part))
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


def _guest_help(context: CustomContext, language: str, *, admin: bool) -> str | None:
    """How to summon the bot as a guest while guest mode is on; while it is off, how to turn it on (admins only)."""
    bot = f"@{context.bot.username}"
    if context.bot.bot.supports_guest_queries:
        return tr(language, GUEST_HELP, bot=bot, example=guest.example(deps(context).operations, context.bot.username))
    return tr(language, GUEST_HELP_OFF, bot=bot) if admin else None


async def _open_app(context: CustomContext, message: Message, payload: str, language: str) -> None:
    """`/start app-…` from a group's Mini App link: answer with the `web_app` button, or say why not."""
    d = deps(context)
    if d.app_links is None:  # the operator turned the Mini App off since the link was sent
        await reply(message, tr(language, texts.APP_OFF))
        return
    job_id = miniapp.deep_link_job(payload)
    job = await d.people.job(job_id) if job_id is not None else None
    answer = miniapp.open_from_link(d.app_links, message, payload, language, job.user_id if job else None)
    if isinstance(answer, str):
        await reply(message, answer)
    else:
        await reply(message, tr(language, texts.APP_OPEN), answer)


def register(application: Application, router: Router) -> None:
    """/start and /help."""
    router.add("start", show_help)
    router.add("help", show_help, texts.HELP_COMMAND)
