"""Reconciliation with Telegram's record of Stars: at start-up and hourly, the ledger is brought in line with it.

A successful_payment can fail to reach the bot (it stopped right after answering the pre-checkout and
stayed down longer than Telegram keeps updates, a proxy lost it); Telegram still lists the charge in
getStarTransactions. Every page is read before anything is decided, so the order Telegram lists
transactions in does not matter. Crediting is keyed by the charge id (bot.credits), so every replica
may reconcile: a charge is credited, and its payer told, by one of them only.

Telegram's record also says who paid and how many Stars: a payment whose credits went to someone else (the
receipt's sender is believed when it arrives) or in another amount is fixed to match, and the admins are
told, as they are of a /refund recorded here that Telegram never made (its credits are given back).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from telegram import Bot, TransactionPartnerUser
from telegram.error import TelegramError

from bot.chats.languages import LanguageChoices
from bot.credits import CreditService, Recovered, StarPayment
from bot.credits.ledger import GrantFix
from bot.credits.service import Reconciliation
from bot.i18n import DEFAULT_LANGUAGE, N_, language_of, ntr, tr

log = logging.getLogger(__name__)

#: how often the ledger is compared with Telegram's record after the start-up's comparison
RECONCILE_EVERY_S = 3600.0
#: transactions asked for per getStarTransactions (Telegram's maximum)
PAGE = 100
#: what the admins are told
GRANT_FIXED = N_("Payment {charge} did not match Telegram's record: user {payer} paid for it and now has its "
                 "{credits} credits. Taken back from others: {taken}. Already spent, so not taken back: {spent}.")
REFUND_UNDONE = N_("Payment {charge} was recorded as refunded, but Telegram never refunded it: its credits are "
                   "given back to its payer.")


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

    def __init__(self, bot: Bot, credits: CreditService, languages: LanguageChoices, *,
                 every: float = RECONCILE_EVERY_S, admins: frozenset[int] = frozenset()) -> None:
        self._bot = bot
        self._admins = admins
        self._credits = credits
        self._languages = languages
        self._every = every

    async def once(self) -> Reconciliation:
        """Read Telegram's record, correct the ledger, tell each payer whose payment it credited and the admins
        what else it changed."""
        payments = await star_payments(self._bot)
        done = await self._credits.reconcile(payments)
        done.recovered.extend(await self._credits.subscriptions.reconcile(payments))  # the plan's periods, beside the packs
        for payment in done.recovered:
            log.warning("payment %s had not reached the bot: %d credits added for user %s",
                        payment.charge_id, payment.credits, payment.user_id)
            await self._tell(payment)
        for fix in done.fixed:
            log.warning("payment %s: credits fixed to match Telegram's record (user %s: %+d; taken %s; spent %d)",
                        fix.charge_id, fix.payer, fix.given, fix.taken, fix.spent)
            await self._tell_admins(lambda language, fix=fix: _fixed_text(language, fix))
        for charge_id in done.undone:
            log.warning("payment %s: a refund recorded here was never made at Telegram; credits given back", charge_id)
            await self._tell_admins(lambda language, charge_id=charge_id: tr(language, REFUND_UNDONE,
                                                                             charge=charge_id))
        return done

    async def _tell_admins(self, text: Callable[[str], str]) -> None:
        """Send each admin a notice, in the language they chose (English otherwise); best effort."""
        for admin in sorted(self._admins):
            chosen = (await self._languages.chosen(chat_id=None, user_id=admin)).user \
                if self._languages is not None else None
            try:
                await self._bot.send_message(admin, text(language_of(chosen or DEFAULT_LANGUAGE)))
            except TelegramError as error:
                log.info("could not tell admin %s about a payment: %s", admin, error)

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
        chosen = (await self._languages.chosen(chat_id=None, user_id=payment.user_id)).user
        language = language_of(chosen or payment.language or DEFAULT_LANGUAGE)
        text = ntr(language, "A payment of yours had not reached me; I found it: {count} credit added.",
                   "A payment of yours had not reached me; I found it: {count} credits added.", payment.credits)
        try:
            await self._bot.send_message(payment.user_id, text)
        except TelegramError as error:  # the payer never opened a private chat with the bot: the credits are there
            log.info("could not tell user %s about payment %s: %s", payment.user_id, payment.charge_id, error)


def _fixed_text(language: str, fix: GrantFix) -> str:
    """The admins' notice of a fixed grant."""
    taken = ", ".join(f"{user}: {credits}" for user, credits in sorted(fix.taken.items())) or "0"
    return tr(language, GRANT_FIXED, charge=fix.charge_id, payer=fix.payer, credits=fix.credits, taken=taken,
              spent=fix.spent)
