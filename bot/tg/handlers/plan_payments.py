"""The plan's payments: the pre-checkout answer and each successful_payment (the first and every renewal).

Added before the packs' handlers (bot.tg.handlers.payments), these take only the plan's payloads
("subscription:…") and renewals; packs are left to those. Each payment adds its period's credits once,
keyed by its charge id (bot.credits.subscription): a redelivered update adds nothing, and one that never
arrives is found by reconciliation (bot.tg.reconcile) under the same key.
"""

from __future__ import annotations

import logging

from telegram import Message, Update
from telegram.error import TelegramError
from telegram.ext import Application, MessageHandler, PreCheckoutQueryHandler, filters

from bot.credits.subscription import PAYLOAD_PREFIX, paid_plan
from bot.i18n import tr
from bot.tg import plan_texts, texts
from bot.tg.context import CustomContext, deps, language_for
from bot.tg.handlers.payments import STARS, answer_checkout
from bot.tg.handlers.router import Router

log = logging.getLogger(__name__)


class _PlanPayment(filters.MessageFilter):
    """A successful_payment of the plan (not of a pack)."""

    def filter(self, message: Message) -> bool:
        payment = message.successful_payment
        return payment is not None and (bool(payment.is_recurring)
                                        or payment.invoice_payload.startswith(PAYLOAD_PREFIX))


async def on_plan_pre_checkout(update: Update, context: CustomContext) -> None:
    """Accept the plan's checkout only as offered now, in Stars, from someone who may use the bot and has none running."""
    query = update.pre_checkout_query
    d = deps(context)
    language = await language_for(context, update=update)
    plan = d.credits.policy.subscription
    error = None
    if plan is None or query.invoice_payload != plan.payload or query.currency != STARS \
            or query.total_amount != plan.stars:
        error = tr(language, plan_texts.PLAN_GONE)
    elif not d.access.allows(query.from_user.id, None):
        error = tr(language, texts.PAYMENT_NOT_ALLOWED)
    else:
        status = await d.credits.subscriptions.status(query.from_user.id)
        if status is not None and status.active(d.clock()):
            error = tr(language, plan_texts.ALREADY_SUBSCRIBED)
    await answer_checkout(query, error, "a plan's")


async def on_plan_payment(update: Update, context: CustomContext) -> None:
    """Add a paid period's credits (the first payment or a renewal), once per charge id, and tell the subscriber."""
    message = update.effective_message
    payment = message.successful_payment
    d = deps(context)
    charge_id = payment.telegram_payment_charge_id
    if d.credits is None or message.from_user is None or payment.subscription_expiration_date is None:
        log.error("plan payment %s (%s) cannot be counted here; reconciliation will", charge_id,
                  payment.invoice_payload)
        return
    if payment.currency != STARS or paid_plan(payment.invoice_payload, payment.total_amount) is None:
        # credits follow what was paid, never the payload alone (as a pack's receipt is read)
        log.warning("plan payment %s (%s, %s %s) buys nothing; not credited", charge_id, payment.invoice_payload,
                    payment.total_amount, payment.currency)
        return
    first = bool(payment.is_first_recurring) if payment.is_recurring else None
    credits = await d.credits.subscriptions.grant(message.from_user.id, payment.invoice_payload, charge_id,
                                                  expires_at=payment.subscription_expiration_date, first=first,
                                                  stars=payment.total_amount)
    if not credits:
        log.info("plan payment %s was already credited", charge_id)
        return
    log.info("plan payment %s: %d credits for user %s until %s", charge_id, credits, message.from_user.id,
             payment.subscription_expiration_date.isoformat())
    language = await language_for(context, message)
    text = (plan_texts.renewed if first is False else plan_texts.subscribed)(
        language, credits, payment.subscription_expiration_date)
    try:
        await message.reply_text(text)
    except TelegramError as error:
        log.warning("could not thank for plan payment %s: %s", charge_id, error)


def register(application: Application, router: Router) -> None:
    """The plan's pre-checkout and payment handlers (the application tries them before the packs')."""
    application.add_handler(PreCheckoutQueryHandler(on_plan_pre_checkout, pattern=f"^{PAYLOAD_PREFIX}"))
    application.add_handler(MessageHandler(_PlanPayment(), on_plan_payment))
