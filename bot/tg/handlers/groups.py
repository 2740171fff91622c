"""The bot's own membership: greet a group when added, saying how the bot is used there."""

from __future__ import annotations

import logging

from telegram import Update
from telegram.constants import ChatMemberStatus, ChatType
from telegram.error import TelegramError
from telegram.ext import Application, ChatMemberHandler

from bot.i18n import tr
from bot.tg import texts
from bot.tg.context import CustomContext, language_for
from bot.tg.handlers.router import Router

log = logging.getLogger(__name__)

_IN = frozenset({ChatMemberStatus.MEMBER, ChatMemberStatus.ADMINISTRATOR})
_OUT = frozenset({ChatMemberStatus.LEFT, ChatMemberStatus.BANNED})


async def on_my_membership(update: Update, context: CustomContext) -> None:
    """The bot was added to a group (left or kicked -> member or admin): say hello and how it works here."""
    change = update.my_chat_member
    if change.chat.type not in (ChatType.GROUP, ChatType.SUPERGROUP):
        return
    if change.old_chat_member.status not in _OUT or change.new_chat_member.status not in _IN:
        return
    lang = await language_for(context, update=update)
    try:
        await context.bot.send_message(change.chat.id, tr(lang, texts.GROUP_GREETING, bot=context.bot.username))
    except TelegramError as error:
        log.info("could not greet chat %s: %s", change.chat.id, error)


def register(application: Application, router: Router) -> None:
    """Greet a group that added the bot."""
    application.add_handler(ChatMemberHandler(on_my_membership, ChatMemberHandler.MY_CHAT_MEMBER))
