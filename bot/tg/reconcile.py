"""Reconciliation with Telegram's record of Stars: at start-up and hourly, the ledger is brought in line with it.

A successful_payment can fail to reach the bot (it stopped right after answering the pre-checkout and
stayed down longer than Telegram keeps updates, a proxy lost it); Telegram still lists the charge in
getStarTransactions. Every page is read before anything is decided, so the order Telegram lists
transactions in does not matter. Crediting is keyed by the charge id (bot.credits), so every replica
may reconcile: a charge is credited, and its payer told, by one of them only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from telegram import Bot, TransactionPartnerUser
from telegram.error import TelegramError

from bot.credits import CreditService, Recovered, StarPayment
from bot.i18n import DEFAULT_LANGUAGE, language_of, ntr
from bot.jobs.languages import LanguageChoices

log = logging.getLogger(__name__)

#: how often the ledger is compared with Telegram's record after the start-up's comparison
RECONCILE_EVERY_S = 3600.0
#: transactions asked for per getStarTransactions (Telegram's maximum)
PAGE = 100


async def star_payments(bot: Bot) -> list[StarPayment]:
    """Every Stars payment from a user that Telegram lists for the bot, with whether it went back."""
    paid: dict[str, StarPayment] = {}
    refunded: set[str] = set()
    offset = 0
    while True:
        page = (await bot.get_star_transactions(offset=offset, limit=PAGE)).transactions
        for transaction in page:
            if isinstance(transaction.source, TransactionPartnerUser) and transaction.source.invoice_payload:
                user, period = transaction.source.user, transaction.source.subscription_period
                paid[transaction.id] = StarPayment(
                    transaction.id, user.id, transaction.amount, transaction.source.invoice_payload,
                    language=user.language_code, date=transaction.date,
                    subscription_period=int(period.total_seconds()) if period is not None else None)
            elif isinstance(transaction.receiver, TransactionPartnerUser):
                refunded.add(transaction.id)  # a refund carries the id of the payment it returns
        if len(page) < PAGE:
            break
        offset += len(page)
    return [StarPayment(payment.charge_id, payment.user_id, payment.stars, payment.payload,
                        refunded=payment.charge_id in refunded, language=payment.language, date=payment.date,
                        subscription_period=payment.subscription_period)
            for payment in paid.values()]


class StarReconciler:
    """Compares the ledger with Telegram's Stars transactions at start and every RECONCILE_EVERY_S."""

    def __init__(self, bot: Bot, credits: CreditService, languages: LanguageChoices | None, *,
                 every: float = RECONCILE_EVERY_S) -> None:
        self._bot = bot
        self._credits = credits
        self._languages = languages
        self._every = every

    async def once(self) -> list[Recovered]:
        """Read Telegram's record, correct the ledger, tell each payer whose payment it credited."""
        payments = await star_payments(self._bot)
        recovered = await self._credits.reconcile(payments)
        recovered += await self._credits.subscriptions.reconcile(payments)  # the plan's periods, beside the packs
        for payment in recovered:
            log.warning("payment %s had not reached the bot: %d credits added for user %s",
                        payment.charge_id, payment.credits, payment.user_id)
            await self._tell(payment)
        return recovered

    async def run(self, stop: asyncio.Event) -> None:
        """Reconcile now and then periodically, until `stop`; a failed round is tried again next time."""
        while not stop.is_set():
            try:
                await self.once()
            except Exception as error:  # Telegram or the database unreachable: the next round catches up
                log.warning("could not reconcile payments with Telegram (%s)", error)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self._every)

    async def _tell(self, payment: Recovered) -> None:
        chosen = (await self._languages.chosen(chat_id=None, user_id=payment.user_id)).user \
            if self._languages is not None else None
        language = language_of(chosen or payment.language or DEFAULT_LANGUAGE)
        text = ntr(language, "A payment of yours had not reached me; I found it: {count} credit added.",
                   "A payment of yours had not reached me; I found it: {count} credits added.", payment.credits)
        try:
            await self._bot.send_message(payment.user_id, text)
        except TelegramError as error:  # the payer never opened a private chat with the bot: the credits are there
            log.info("could not tell user %s about payment %s: %s", payment.user_id, payment.charge_id, error)
