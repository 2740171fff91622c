"""What handlers answer with, shared: a button press answered (exactly once), an admin's refusal.

Every callback query is answered exactly once, whatever became of its update.

Telegram shows a spinner on a pressed button until the bot answers the query, and refuses a second
answer ("query is too old … or query ID is invalid"). Handlers answer as they decide; the request
layer notes every query id an answerCallbackQuery was sent for (`AnsweredQueries`), and the intake
calls `settle` once an update is done with (handled, a handler failed, skipped as a redelivery,
dropped in a flood): a query nothing answered is answered then, with no text.
"""

from __future__ import annotations

import logging

from telegram import CallbackQuery, Update
from telegram.constants import ChatMemberStatus
from telegram.error import TelegramError
from telegram.ext import Application

from bot.tg.context import CustomContext

log = logging.getLogger(__name__)

#: answered query ids remembered (a query is settled within moments of its answer)
_KEPT = 4096


class AnsweredQueries:
    """The callback query ids this process sent an answer for, the most recent ones."""

    def __init__(self, kept: int = _KEPT) -> None:
        self._kept = kept
        self._ids: dict[str, None] = {}  # insertion-ordered: the oldest are forgotten first

    def add(self, query_id: str) -> None:
        """Note an answer sent (Telegram took it, or refused it as too old: either way, never again)."""
        self._ids[query_id] = None
        if len(self._ids) > self._kept:
            del self._ids[next(iter(self._ids))]

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._ids


async def settle(application: Application, update: Update) -> None:
    """Answer the update's callback query unless an answer was sent for it already."""
    query = update.callback_query
    answered = application.bot_data.answered
    if query is None or answered is None or query.id in answered:
        return
    try:
        await application.bot.answer_callback_query(query.id)
    except TelegramError as error:  # too old by now: the spinner has stopped by itself
        log.info("could not answer the button press of update %s: %s", update.update_id, error)
    except Exception:  # an answer is a courtesy: it must never break what called it
        log.warning("could not answer the button press of update %s", update.update_id, exc_info=True)


async def answer(query: CallbackQuery, text: str | None = None, *, alert: bool = False) -> None:
    """Answer a button press (a query too old to answer is not worth an error)."""
    try:
        await query.answer(text, show_alert=alert)
    except TelegramError:
        return


#: who counts as a group's admin
ADMIN_STATUSES = frozenset({ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR})


async def admin_refusal(context: CustomContext, chat_id: int, user_id: int | None,
                        sender_chat_id: int | None, *, not_admin: str, check_failed: str) -> str | None:
    """None when the sender is an admin of the group (asked with getChatMember); else `not_admin`, or
    `check_failed` when Telegram could not tell (failing closed)."""
    if sender_chat_id is not None:
        # only the group's admins can speak as the group itself; a channel posting here is no admin
        return None if sender_chat_id == chat_id else not_admin
    if user_id is None:
        return not_admin
    try:
        member = await context.bot.get_chat_member(chat_id, user_id)
    except TelegramError as error:
        log.warning("could not check admin status in chat %s: %s", chat_id, error)
        return check_failed
    return None if member.status in ADMIN_STATUSES else not_admin
