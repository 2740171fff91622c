"""The monthly plan in Telegram Stars: its invoice link, its payments, and /subscription to see, cancel or resume it.

A Stars subscription is an invoice link (createInvoiceLink with subscription_period, 30 days, the only
value Telegram takes); Telegram charges each renewal by itself and sends another successful_payment
with a new charge id (`is_recurring`, `is_first_recurring` only on the first). Every one of them adds
the period's credits once, keyed by its charge id (bot.credits.subscription), so a redelivery adds
nothing, and reconciliation (bot.tg.reconcile) finds one that never arrived. The payments are handled
in bot.tg.handlers.plan_payments, added before the packs' handlers.

Callback data: "plan:<credits>:<stars>" asks for the plan's link (or shows the plan to a subscriber),
"subx:show" shows /subscription, "subx:cancel" and "subx:resume" stop or allow renewal
(editUserStarSubscription); the state is in the database, so it survives restarts.
"""

from __future__ import annotations

import logging
from datetime import datetime

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, LabeledPrice, Message, Update
from telegram.error import TelegramError
from telegram.ext import Application, CallbackQueryHandler

from bot.credits import Pack, SubscriptionPlan, SubscriptionStatus
from bot.credits.subscription import PERIOD
from bot.i18n import tr
from bot.tg import plan_texts
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext, deps, language_for
from bot.tg.handlers.guest import NOT_YOURS
from bot.tg.handlers.router import Router
from bot.tg.replies import reply

log = logging.getLogger(__name__)

STARS = "XTR"
PLAN_PREFIX = "plan:"
STATUS_PREFIX = "subx"
SHOW, CANCEL, RESUME = f"{STATUS_PREFIX}:show", f"{STATUS_PREFIX}:cancel", f"{STATUS_PREFIX}:resume"


def plan_button(language: str, plan: SubscriptionPlan) -> InlineKeyboardButton:
    """/buy's button of the plan; its data names the plan by its terms (changed terms: a new plan)."""
    return InlineKeyboardButton(plan_texts.plan_button(language, plan.credits, plan.stars),
                                callback_data=f"{PLAN_PREFIX}{plan.credits}:{plan.stars}")


def my_plan_button(language: str) -> InlineKeyboardButton:
    """The button under /balance and /buy that shows /subscription."""
    return InlineKeyboardButton(tr(language, plan_texts.MY_PLAN_BUTTON), callback_data=SHOW)


def buy_text(language: str, prompt: str, packs: tuple[Pack, ...], plan: SubscriptionPlan | None) -> str:
    """/buy's text: the packs' prompt, and with a plan the price of a credit in it against the packs'."""
    if plan is None:
        return prompt
    compared = plan_texts.comparison(language, plan.credits, plan.stars, [(p.credits, p.stars) for p in packs])
    return f"{prompt}\n{compared}" if packs else compared


def buy_keyboard(language: str, packs: InlineKeyboardMarkup, plan: SubscriptionPlan | None) -> InlineKeyboardMarkup:
    """/buy's buttons: the packs', then the plan's and "My plan"."""
    if plan is None:
        return packs
    return InlineKeyboardMarkup([*packs.inline_keyboard, [plan_button(language, plan)], [my_plan_button(language)]])


async def plan_under_balance(context: CustomContext, user_id: int,
                             language: str) -> tuple[list[str], InlineKeyboardMarkup | None]:
    """/balance's plan credits left this period, and its "My plan" button when a plan is offered or held."""
    d = deps(context)
    if d.credits is None:
        return [], None
    status = await d.credits.subscriptions.status(user_id)
    if d.credits.policy.subscription is None and status is None:
        return [], None
    lines = [tr(language, plan_texts.PLAN_CREDITS_LEFT, left=status.left)] \
        if status is not None and status.active(d.clock()) else []
    return lines, InlineKeyboardMarkup([[my_plan_button(language)]])


def status_text(language: str, plan: SubscriptionPlan | None, status: SubscriptionStatus | None,
                now: datetime) -> str:
    """What /subscription says: the plan and its period, or what is on offer."""
    if status is None:
        if plan is None:
            return tr(language, plan_texts.NO_PLAN_OFFERED)
        return "\n".join([tr(language, plan_texts.NO_PLAN), plan_texts.plan_terms(language, plan.credits, plan.stars),
                          tr(language, plan_texts.PLAN_EXPIRY)])
    lines = [plan_texts.plan_terms(language, status.credits, status.stars)]
    when = plan_texts.day(language, status.expires_at)
    if not status.active(now):
        lines.append(tr(language, plan_texts.PLAN_ENDED, date=when))
        return "\n".join(lines)
    lines.append(tr(language, plan_texts.PLAN_CREDITS_LEFT, left=status.left))
    lines.append(tr(language, plan_texts.PLAN_CANCELED if status.canceled else plan_texts.PLAN_RENEWS, date=when))
    return "\n".join(lines)


def status_keyboard(language: str, plan: SubscriptionPlan | None, status: SubscriptionStatus | None,
                    now: datetime) -> InlineKeyboardMarkup | None:
    """Cancel or resume renewal while a period runs; subscribe when there is none and a plan is offered."""
    if status is not None and status.active(now):
        label, data = (plan_texts.RESUME_BUTTON, RESUME) if status.canceled else (plan_texts.CANCEL_BUTTON, CANCEL)
        return InlineKeyboardMarkup([[InlineKeyboardButton(tr(language, label), callback_data=data)]])
    if plan is not None:
        return InlineKeyboardMarkup([[plan_button(language, plan)]])
    return None


async def _status(context: CustomContext, user_id: int,
                  language: str) -> tuple[str, InlineKeyboardMarkup | None]:
    d = deps(context)
    plan = d.credits.policy.subscription
    status = await d.credits.subscriptions.status(user_id)
    now = d.clock()
    return status_text(language, plan, status, now), status_keyboard(language, plan, status, now)


async def show_subscription(update: Update, context: CustomContext, call: CommandCall) -> None:
    """/subscription: what the plan gives, when it renews, credits left this period, and cancel or resume."""
    message, language = update.effective_message, await language_for(context, update=update)
    user = update.effective_user
    if user is None or message.sender_chat is not None:
        await reply(message, tr(language, plan_texts.NO_PLAN))
        return
    text, keyboard = await _status(context, user.id, language)
    await reply(message, text, keyboard)


async def send_plan_link(message: Message, language: str, plan: SubscriptionPlan) -> None:
    """Send the plan's subscription link (a createInvoiceLink with the 30-day period) into the chat."""
    title = plan_texts.plan_title(language, plan.credits)
    link = await message.get_bot().create_invoice_link(
        title=title, description=plan_texts.plan_description(language, plan.credits), payload=plan.payload,
        currency=STARS, prices=[LabeledPrice(title, plan.stars)], subscription_period=PERIOD)
    text = "\n".join([plan_texts.plan_terms(language, plan.credits, plan.stars),
                      tr(language, plan_texts.PLAN_EXPIRY), tr(language, plan_texts.SUBSCRIBE_PROMPT)])
    keyboard = InlineKeyboardMarkup([[InlineKeyboardButton(tr(language, plan_texts.SUBSCRIBE_BUTTON), url=link)]])
    await message.get_bot().send_message(message.chat_id, text, reply_markup=keyboard)


async def on_plan_button(update: Update, context: CustomContext) -> None:
    """The plan chosen from /buy: its link, if it is still offered and the presser has no running plan."""
    query = update.callback_query
    language = await language_for(context, update=update)
    d = deps(context)
    plan = d.credits.policy.subscription
    message = query.message if isinstance(query.message, Message) else None
    try:
        if plan is None or query.data != f"{PLAN_PREFIX}{plan.credits}:{plan.stars}" or message is None:
            await query.answer(tr(language, plan_texts.PLAN_GONE), show_alert=True)
            return
        status = await d.credits.subscriptions.status(query.from_user.id)
        if status is not None and status.active(d.clock()):
            await query.answer(tr(language, plan_texts.ALREADY_SUBSCRIBED), show_alert=True)
            return
        await query.answer()
        await send_plan_link(message, language, plan)
    except TelegramError as error:
        log.warning("could not send the plan's link: %s", error)


def _presser_owns(message: Message | None, user_id: int) -> bool:
    """Whether a plan message's buttons are the presser's: their private chat, or the reply to their /subscription."""
    if message is None or message.chat.type == "private":
        return message is None or message.chat.id == user_id
    asked = message.reply_to_message
    return asked is not None and asked.from_user is not None and asked.from_user.id == user_id


async def on_status_button(update: Update, context: CustomContext) -> None:
    """"My plan", "Cancel renewal", "Resume renewal": the presser's own plan, changed at Telegram first."""
    query = update.callback_query
    language = await language_for(context, update=update)
    d = deps(context)
    user_id = query.from_user.id
    message = query.message if isinstance(query.message, Message) else None
    try:
        if query.data in (CANCEL, RESUME) and not _presser_owns(message, user_id):
            # another member's press under someone's /subscription in a group: neither plan changes, nor the message
            await query.answer(tr(language, NOT_YOURS), show_alert=True)
            return
        if query.data in (CANCEL, RESUME):
            status = await d.credits.subscriptions.status(user_id)
            if status is not None and status.active(d.clock()):
                cancel = query.data == CANCEL
                try:
                    await query.get_bot().edit_user_star_subscription(user_id, status.charge_id, cancel)
                except TelegramError as error:
                    await query.answer(tr(language, plan_texts.PLAN_EDIT_FAILED, reason=error.message),
                                       show_alert=True)
                    return
                await d.credits.subscriptions.set_canceled(user_id, cancel)
                log.info("user %s %s the renewal of their plan", user_id, "stopped" if cancel else "resumed")
        await query.answer()
        text, keyboard = await _status(context, user_id, language)
        if message is not None and query.data != SHOW:
            await message.edit_text(text, reply_markup=keyboard)
        elif message is not None:
            await message.get_bot().send_message(message.chat_id, text, reply_markup=keyboard)
    except TelegramError as error:
        log.warning("could not show user %s their plan: %s", user_id, error)


def register(application: Application, router: Router) -> None:
    """The plan's buttons and /subscription (its payments: bot.tg.handlers.plan_payments)."""
    application.add_handler(CallbackQueryHandler(on_plan_button, pattern=f"^{PLAN_PREFIX}"))
    application.add_handler(CallbackQueryHandler(on_status_button, pattern=f"^{STATUS_PREFIX}:"))
    router.add("subscription", show_subscription, plan_texts.SUBSCRIPTION_COMMAND)
