"""Telling the admins once a day that the free credits' daily budget (FREE_CREDITS_DAILY_BUDGET) is all given.

The job that took the day's last free credit is found in the database, in the transaction that took it
(bot.credits.budget): exactly one, whichever replica ran it. That replica tells BOT_ADMINS, in English
as the service alarm does; an admin who never started the bot is logged, not retried.
"""

from __future__ import annotations

import logging

from telegram.error import TelegramError
from telegram.ext import Application

from bot.config import Settings
from bot.i18n import tr
from bot.tg import plan_texts

log = logging.getLogger(__name__)


def budget_spent(application: Application, settings: Settings) -> None:
    """Start telling the admins that today's free credits are all given (called once a day, by one replica)."""
    log.warning("the free credits' daily budget (%s) is all given for today", settings.free_budget)
    application.create_task(_tell(application, settings), name="free budget alarm")


async def _tell(application: Application, settings: Settings) -> None:
    text = tr("en", plan_texts.ADMIN_FREE_BUDGET_SPENT, budget=settings.free_budget)
    for admin_id in sorted(settings.bot_admins):
        try:
            await application.bot.send_message(admin_id, text)
        except TelegramError as error:  # an admin who never started the bot cannot be written to
            log.warning("could not tell admin %s that the free budget is spent: %s", admin_id, error)
