"""/balance, /buy, /refund (admins) and /pool (group admins): credits as people see them."""

from __future__ import annotations

import logging

from telegram import Message, Update
from telegram.constants import ChatType
from telegram.error import BadRequest, TelegramError
from telegram.ext import Application

from bot.aiart import AiartError
from bot.i18n import tr
from bot.tg import texts
from bot.tg.answers import admin_refusal
from bot.tg.commands import CommandCall
from bot.tg.context import CustomContext, deps, language_for, sender_id
from bot.tg.handlers.router import Router
from bot.tg.handlers.subscription import buy_keyboard, buy_text, plan_under_balance
from bot.tg.keyboards import packs_keyboard
from bot.tg.replies import reply

log = logging.getLogger(__name__)


async def show_balance(update: Update, context: CustomContext, call: CommandCall) -> None:
    """The caller's credits, today's free allowance and this group's pool; admins also the service's tokens."""
    d, message, language = deps(context), update.effective_message, await language_for(context, update=update)
    owner = sender_id(message)
    lines = []
    if owner is not None:
        chat = update.effective_chat
        mine = await d.credits.balance(owner, chat_id=chat.id, chat_type=chat.type)
        lines.append(tr(language, texts.BALANCE_MINE, credits=mine.credits, free_left=mine.free_left,
                        free_per_day=mine.free_per_day))
        if mine.pool is not None:
            lines.append(tr(language, texts.BALANCE_POOL, pool=mine.pool, left=mine.pool_left))
    user = update.effective_user
    if user is not None and user.id in d.access.admins:
        try:
            service = await d.client.credits()
            lines.append(texts.balance_text(service.total, service.remaining, language=language))
        except AiartError as error:
            log.warning("balance query failed: %r", error)
            lines.append(tr(language, texts.BALANCE_SERVICE_FAILED))
    plan_lines, keyboard = await plan_under_balance(context, owner, language) if owner is not None else ([], None)
    lines[1:1] = plan_lines
    await reply(message, "\n".join(lines) if lines else tr(language, texts.BALANCE_ADMINS_ONLY), keyboard)


async def buy(update: Update, context: CustomContext, call: CommandCall) -> None:
    """The packs on sale, as buttons that send their invoices; or that payments are off."""
    d, language = deps(context), await language_for(context, update=update)
    packs = d.credits.policy.packs
    plan = d.credits.policy.subscription
    if not packs and plan is None:
        await reply(update.effective_message, tr(language, texts.PAYMENTS_OFF))
        return
    # the plan, when there is one, beside the packs: bot.tg.handlers.subscription
    await reply(update.effective_message, buy_text(language, tr(language, texts.BUY_PROMPT), packs, plan),
                buy_keyboard(language, packs_keyboard(language, packs), plan))


async def refund(update: Update, context: CustomContext, call: CommandCall) -> None:
    """/refund <charge id> (admins): return a payment's Stars and take its credits back, unless they were spent."""
    d, message, language = deps(context), update.effective_message, await language_for(context, update=update)
    user = update.effective_user
    if user is None or user.id not in d.access.admins:
        await reply(message, tr(language, texts.REFUND_ADMINS_ONLY))
        return
    charge_id = call.args.strip()
    if not charge_id or " " in charge_id:
        await reply(message, tr(language, texts.REFUND_USAGE))
        return
    async def refund_stars(user_id: int) -> None:
        try:
            await message.get_bot().refund_star_payment(user_id, charge_id)
        except BadRequest as error:
            # refunded at Telegram but not here (a crash before our commit): take the credits now
            if "CHARGE_ALREADY_REFUNDED" not in str(error.message).upper():
                raise

    try:
        outcome = await d.credits.refund_payment(charge_id, refund_stars)
    except TelegramError as error:
        await reply(message, tr(language, texts.REFUND_FAILED, reason=error.message))
        return
    if outcome.status == "unknown":
        text = tr(language, texts.REFUND_UNKNOWN)
    elif outcome.status == "refunded":
        text = tr(language, texts.REFUND_ALREADY)
    elif outcome.status == "spent":
        text = texts.refund_spent(language, outcome.credits, outcome.balance)
    else:
        text = texts.refund_done(language, outcome.user_id, outcome.credits)
    await reply(message, text)


async def pool(update: Update, context: CustomContext, call: CommandCall) -> None:
    """/pool add N, /pool cap N|off (group admins): fill the group's pool from one's own credits; cap each member."""
    d, message, language = deps(context), update.effective_message, await language_for(context, update=update)
    chat = update.effective_chat
    if chat.type == ChatType.PRIVATE:
        await reply(message, tr(language, texts.POOL_GROUPS_ONLY))
        return
    words = call.args.lower().split()
    if len(words) != 2 or words[0] not in ("add", "cap") or not (words[1].isdecimal() or words[:2] == ["cap", "off"]):
        await reply(message, tr(language, texts.POOL_USAGE))
        return
    refusal = await _refusal_of_pool(context, message, language)
    if refusal is not None:
        await reply(message, refusal)
        return
    if words[0] == "cap":
        cap = None if words[1] == "off" else int(words[1])
        await d.credits.set_pool_cap(chat.id, cap)
        await reply(message, tr(language, texts.POOL_CAP_OFF) if cap is None
                    else texts.pool_cap_set(language, cap))
        return
    amount = int(words[1])
    balance = await d.credits.move_to_pool(message.from_user.id, chat.id, amount) if amount > 0 else None
    await reply(message, texts.pool_short(language, amount) if balance is None
                else texts.pool_added(language, amount, balance))


async def _refusal_of_pool(context: CustomContext, message: Message, language: str) -> str | None:
    """Why the sender may not manage the group's pool, or None if they may (asks Telegram; fails closed)."""
    if message.from_user is None or message.sender_chat is not None:
        # an anonymous admin or a channel has no credits of its own to move
        return tr(language, texts.POOL_ADMINS_ONLY)
    refusal = await admin_refusal(context, message.chat_id, message.from_user.id, None,
                                  not_admin=texts.POOL_ADMINS_ONLY, check_failed=texts.POOL_ADMIN_CHECK_FAILED)
    return None if refusal is None else tr(language, refusal)


def register(application: Application, router: Router) -> None:
    """/balance, /buy and /pool."""
    router.add("balance", show_balance, texts.CREDITS_COMMAND)
    router.add("buy", buy, texts.BUY_COMMAND)
    router.add("pool", pool)
    router.add("refund", refund, texts.REFUND_COMMAND, admins_only=True)
