"""Telegram Stars: invoices for the operator's packs, the pre-checkout answer, and crediting a successful payment.

Stars invoices are in "XTR" with no provider token and exactly one price. Telegram waits 10 s for the
pre-checkout answer, so the check is a look-up in memory (the pack is still offered, the payer may use
the bot). A successful payment adds its credits once, keyed by its telegram_payment_charge_id: Telegram
may deliver the update again (a crash before the offset was confirmed), and a repeat adds nothing;
one that never arrives is credited by reconciliation (bot.tg.reconcile) under the same key.
"""

from __future__ import annotations

import logging
from typing import Any

from telegram import Bot, LabeledPrice, Message, PreCheckoutQuery, Update
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    CallbackQueryHandler,
    MessageHandler,
    PreCheckoutQueryHandler,
    filters,
)

from bot.credits import Pack, pack_of
from bot.credits.texts import invoice_description, invoice_title
from bot.i18n import tr
from bot.tg import texts
from bot.tg.context import CustomContext, deps, language_for
from bot.tg.handlers.router import Router
from bot.tg.keyboards import BUY_PREFIX

log = logging.getLogger(__name__)

STARS = "XTR"


def invoice_of(language: str, pack: Pack) -> dict[str, Any]:
    """A pack's Stars invoice, as sendInvoice and createInvoiceLink both take it (pre-checkout checks its payload)."""
    title = invoice_title(language, pack.credits)
    return {"title": title, "description": invoice_description(language, pack.credits), "payload": pack.payload,
            "currency": STARS, "prices": [LabeledPrice(title, pack.stars)]}


async def send_invoice(message: Message, language: str, pack: Pack) -> None:
    """Send the Stars invoice for a pack into the chat."""
    await message.get_bot().send_invoice(message.chat_id, **invoice_of(language, pack))


async def invoice_link(bot: Bot, language: str, pack: Pack) -> str:
    """A link to a pack's Stars invoice, for the Mini App to open in place (Telegram.WebApp.openInvoice)."""
    return await bot.create_invoice_link(**invoice_of(language, pack))


async def on_buy_button(update: Update, context: CustomContext) -> None:
    """A pack chosen from /buy's keyboard: its invoice, if the pack is still offered."""
    query = update.callback_query
    language = await language_for(context, update=update)
    pack = pack_of("credits:" + query.data.removeprefix(BUY_PREFIX), deps(context).credits.policy.packs)
    message = query.message if isinstance(query.message, Message) else None
    try:
        if pack is None or message is None:
            await query.answer(tr(language, texts.PACK_GONE), show_alert=True)
            return
        await query.answer()
        await send_invoice(message, language, pack)
    except TelegramError as error:
        log.warning("could not send an invoice: %s", error)


async def on_pre_checkout(update: Update, context: CustomContext) -> None:
    """Accept a checkout only for a pack still offered, in Stars, at its price, from someone who may use the bot."""
    query = update.pre_checkout_query
    d = deps(context)
    language = await language_for(context, update=update)
    pack = pack_of(query.invoice_payload, d.credits.policy.packs if d.credits else ())
    error = None
    if pack is None or query.currency != STARS or query.total_amount != pack.stars:
        error = tr(language, texts.PACK_GONE)
    elif not d.access.allows(query.from_user.id, None):
        error = tr(language, texts.PAYMENT_NOT_ALLOWED)
    await answer_checkout(query, error, "a pack's")


async def answer_checkout(query: PreCheckoutQuery, error: str | None, what: str) -> None:
    """Accept the checkout when there is no `error`, else refuse it saying why; a failed answer is only logged
    (Telegram then cancels the payment itself)."""
    try:
        await query.answer(ok=error is None, error_message=error)
    except TelegramError as failure:
        log.warning("could not answer %s pre-checkout query of user %s: %s", what, query.from_user.id, failure)


async def on_successful_payment(update: Update, context: CustomContext) -> None:
    """Add a paid pack's credits, once per charge id, and thank the payer."""
    message = update.effective_message
    payment = message.successful_payment
    d = deps(context)
    pack = Pack(0, 0)
    if message.from_user is not None and payment.currency == STARS:
        # what the Stars paid buy, never more than the invoice's pack; the payer is the receipt's sender, and
        # reconciliation (bot.tg.reconcile) corrects both from Telegram's own record if they ever differ
        pack = Pack(d.credits.credits_paid(payment.invoice_payload, payment.total_amount), payment.total_amount)
    if pack.credits <= 0:
        log.error("payment %s (%s) names no pack; not credited", payment.telegram_payment_charge_id,
                  payment.invoice_payload)
        return
    added = await d.credits.purchase(message.from_user.id, pack, payment.telegram_payment_charge_id)
    if not added:
        log.info("payment %s was already credited", payment.telegram_payment_charge_id)
        return
    log.info("payment %s: %d credits for user %s", payment.telegram_payment_charge_id, pack.credits,
             message.from_user.id)
    balance = await d.credits.balance(message.from_user.id, chat_id=message.chat_id, chat_type=message.chat.type)
    language = await language_for(context, message)
    try:
        await message.reply_text(texts.purchased_text(language, pack.credits, balance.credits))
    except TelegramError as error:
        log.warning("could not thank for payment %s: %s", payment.telegram_payment_charge_id, error)


def register(application: Application, router: Router) -> None:
    """Add the payment handlers (before the general message handler: a payment is a message without text)."""
    application.add_handler(PreCheckoutQueryHandler(on_pre_checkout))
    application.add_handler(MessageHandler(filters.SUCCESSFUL_PAYMENT, on_successful_payment))
    application.add_handler(CallbackQueryHandler(on_buy_button, pattern=f"^{BUY_PREFIX}"))
