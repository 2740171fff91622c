"""Telegram Stars in the fake Bot API: invoices, pre-checkout queries, payments, refunds, the Stars ledger.

As Telegram does it for Stars (currency "XTR"): sendInvoice takes an empty or absent provider_token and
exactly one price of 1-10000 Stars, a title of 1-32 characters, a description of 1-255 and a payload
of 1-128 bytes. A user paying makes a "pre_checkout_query" update; the bot must answer it within 10
seconds (later, or twice, is "query is too old…"), and only after `ok` does a message with
`successful_payment` arrive, carrying a new telegram_payment_charge_id. refundStarPayment answers
CHARGE_NOT_FOUND for a charge it does not know (or of another user) and CHARGE_ALREADY_REFUNDED the
second time; getStarTransactions lists payments and refunds, oldest first as the Bot API documents it
(`newest_first` turns the order round: the bot must not depend on it). A StarTransaction's id is the
charge id for a payment (`source`: a TransactionPartnerUser with the invoice_payload) and again the
payment's charge id for its refund (`receiver`: the same user).

createInvoiceLink (a link a Mini App opens with Telegram.WebApp.openInvoice, or a chat message carries) checks
the invoice as sendInvoice does and answers the link as a string; the fake knows no business connection, so a
`business_connection_id` is BUSINESS_CONNECTION_INVALID. Both refuse tips (`max_tip_amount`,
`suggested_tip_amounts`), which Stars invoices do not take. Anyone holding a link may pay it: the payer is who
opens it (`user_pays_link`), not whoever the bot made it for.

Subscriptions (Bot API 8.0): createInvoiceLink with `subscription_period` makes a link to a subscription;
the period must be 2592000 (30 days, the only value Telegram takes: SUBSCRIPTION_PERIOD_INVALID
otherwise), the currency XTR, and the one price at most 10000 Stars. Paying it gives a successful_payment
with `is_recurring`, `is_first_recurring` and `subscription_expiration_date`; each renewal
(`renew`, as Telegram charges by itself at the end of a period) another one with a new charge id and
`is_first_recurring` absent, listed by getStarTransactions with the partner's `subscription_period`.
editUserStarSubscription(user_id, telegram_payment_charge_id, is_canceled) stops or allows renewal; the
charge id names the subscription (its first payment's), CHARGE_NOT_FOUND otherwise.

A test may also act as what the bot cannot see: a payment whose successful_payment update never reaches
the bot (`user_pays(..., receipt_delivered=False)`: the bot was down longer than Telegram keeps updates,
a proxy lost it), and a refund made outside the bot (`refund_outside`, e.g. by the operator's other tool).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.fakes.telegram_checks import check_reply_markup
from tests.fakes.telegram_models import Chat, User, bad_request, private_chat
from tests.fakes.telegram_params import int_param, str_param
from tests.fakes.telegram_state import TelegramState

STARS = "XTR"
#: seconds Telegram waits for answerPreCheckoutQuery
PRE_CHECKOUT_DEADLINE_S = 10.0
#: the only subscription period Telegram takes (30 days)
SUBSCRIPTION_PERIOD_S = 2592000
MOST_STARS = 10000
_QUERY_TOO_OLD = "query is too old and response timeout expired or query ID is invalid"


@dataclass
class Charge:
    """A payment made: who paid how many Stars for which payload, and whether it was refunded."""

    charge_id: str
    user: User
    chat: Chat
    amount: int
    payload: str
    date: int
    refunded_at: int | None = None
    #: for a subscription's payment: the period it pays for, in seconds
    subscription_period: int | None = None


@dataclass
class Subscription:
    """A user's subscription to the bot: named by its first payment's charge id; renewed until cancelled."""

    charge_id: str
    user: User
    chat: Chat
    amount: int
    payload: str
    period: int
    expires_at: int
    charge_ids: list[str] = field(default_factory=list)
    #: renewal stopped by the bot (editUserStarSubscription with is_canceled)
    canceled_by_bot: bool = False


@dataclass
class _Query:
    user: User
    chat: Chat
    invoice: dict[str, Any]
    asked_at: float
    answer: dict[str, Any] | None = None
    receipt_delivered: bool = True


@dataclass
class Payments:
    """Stars invoices and payments; tests act as paying users through `user_pays`."""

    state: TelegramState
    #: the clock of the pre-checkout deadline (a test may move it on)
    clock: Callable[[], float] = time.monotonic
    invoices: dict[tuple[int, int], dict[str, Any]] = field(default_factory=dict)
    queries: dict[str, _Query] = field(default_factory=dict)
    charges: dict[str, Charge] = field(default_factory=dict)
    #: the successful_payment messages, by charge id (to deliver one again)
    receipts: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: invoice links made by createInvoiceLink, by the link
    links: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[str, Subscription] = field(default_factory=dict)
    #: getStarTransactions lists the newest first (the Bot API says oldest first; the bot must not rely on either)
    newest_first: bool = False
    _charge_numbers: Any = field(default_factory=lambda: itertools.count(1))

    # --- Bot API methods --------------------------------------------------------------------------

    async def send_invoice(self, params: dict[str, Any], files: Any) -> dict[str, Any]:
        """sendInvoice, for Stars."""
        chat = self.state.require_chat(params)
        invoice = _checked_invoice(params)
        markup = check_reply_markup(params.get("reply_markup"), chat)
        shown = {"title": invoice["title"], "description": invoice["description"], "start_parameter": "",
                 "currency": STARS, "total_amount": invoice["total_amount"]}
        message = self.state.add_message(chat, self.state.bot, "invoice", from_bot=True, reply_markup=markup,
                                         extra={"invoice": shown})
        self.invoices[(chat.id, message.message_id)] = invoice
        return message.to_dict()

    async def create_invoice_link(self, params: dict[str, Any], files: Any) -> str:
        """createInvoiceLink, for Stars; with `subscription_period`, a link to a subscription."""
        if params.get("business_connection_id") is not None:
            raise bad_request("BUSINESS_CONNECTION_INVALID")
        invoice = _checked_invoice(params)
        period = params.get("subscription_period")
        if period is not None:
            if isinstance(period, bool) or not isinstance(period, int) or period != SUBSCRIPTION_PERIOD_S:
                raise bad_request("SUBSCRIPTION_PERIOD_INVALID")
            invoice["subscription_period"] = period
        link = f"https://t.me/$fake{secrets.token_urlsafe(12)}"
        self.links[link] = invoice
        return link

    async def answer_pre_checkout_query(self, params: dict[str, Any], files: Any) -> bool:
        """answerPreCheckoutQuery: ok, or not ok with an error_message; within 10 s, once."""
        query_id = str_param(params, "pre_checkout_query_id")
        if not query_id:
            raise bad_request("pre_checkout_query_id is empty")
        query = self.queries.get(query_id)
        if query is None or query.answer is not None or self.clock() - query.asked_at > PRE_CHECKOUT_DEADLINE_S:
            raise bad_request(_QUERY_TOO_OLD)
        ok = params.get("ok")
        if not isinstance(ok, bool):
            raise bad_request("ok must be a boolean")
        error = str_param(params, "error_message")
        if not ok and not error:
            raise bad_request("error_message is empty")
        query.answer = {"ok": ok, "error_message": error}
        if ok:
            self._pay(query)
        return True

    async def refund_star_payment(self, params: dict[str, Any], files: Any) -> bool:
        """refundStarPayment."""
        user_id = int_param(params, "user_id", "user_id is empty")
        charge = self.charges.get(str_param(params, "telegram_payment_charge_id") or "")
        if charge is None or charge.user.id != user_id:
            raise bad_request("CHARGE_NOT_FOUND")
        if charge.refunded_at is not None:
            raise bad_request("CHARGE_ALREADY_REFUNDED")
        charge.refunded_at = max(int(time.time()), charge.date + 1)  # listed after its payment
        return True

    async def edit_user_star_subscription(self, params: dict[str, Any], files: Any) -> bool:
        """editUserStarSubscription: stop (is_canceled true) or allow again the renewal of a user's subscription."""
        user_id = int_param(params, "user_id", "user_id is empty")
        subscription = self.subscriptions.get(str_param(params, "telegram_payment_charge_id") or "")
        if subscription is None or subscription.user.id != user_id:
            raise bad_request("CHARGE_NOT_FOUND")
        canceled = params.get("is_canceled")
        if not isinstance(canceled, bool):
            raise bad_request("is_canceled must be a boolean")
        subscription.canceled_by_bot = canceled
        return True

    async def get_star_transactions(self, params: dict[str, Any], files: Any) -> dict[str, Any]:
        """getStarTransactions: incoming payments and outgoing refunds, oldest first."""
        offset = params.get("offset", 0)
        limit = params.get("limit", 100)
        if not isinstance(offset, int) or not isinstance(limit, int) or not 1 <= limit <= 100 or offset < 0:
            raise bad_request("invalid offset or limit")
        rows: list[dict[str, Any]] = []
        for charge in self.charges.values():
            partner = {"type": "user", "user": charge.user.to_dict(), "transaction_type": "invoice_payment",
                       "invoice_payload": charge.payload}
            if charge.subscription_period is not None:
                partner["subscription_period"] = charge.subscription_period
            rows.append({"id": charge.charge_id, "amount": charge.amount, "date": charge.date, "source": partner})
            if charge.refunded_at is not None:
                rows.append({"id": charge.charge_id, "amount": charge.amount, "date": charge.refunded_at,
                             "receiver": partner})  # a refund goes back to the payer, for the same invoice
        rows.sort(key=lambda row: row["date"], reverse=self.newest_first)
        return {"transactions": rows[offset:offset + limit]}

    # --- acting as users ----------------------------------------------------------------------------

    def user_pays(self, chat: Chat, user: User, invoice_message_id: int, *, receipt_delivered: bool = True) -> str:
        """A user presses Pay on an invoice the bot sent: queues a pre_checkout_query update, returns its id.

        With `receipt_delivered` False, the payment, once the bot accepts it, is charged and listed by
        getStarTransactions, but its successful_payment update never reaches the bot."""
        invoice = self.invoices.get((chat.id, invoice_message_id))
        if invoice is None:
            raise ValueError(f"no invoice {invoice_message_id} in chat {chat.id}")
        self.state.remember(chat, user)
        query_id = str(secrets.randbits(63))
        self.queries[query_id] = _Query(user, chat, invoice, self.clock(), receipt_delivered=receipt_delivered)
        self.state.push_update("pre_checkout_query", {
            "id": query_id, "from": user.to_dict(), "currency": invoice["currency"],
            "total_amount": invoice["total_amount"], "invoice_payload": invoice["payload"]})
        return query_id

    def user_pays_link(self, user: User, link: str, *, receipt_delivered: bool = True) -> str:
        """A user opens an invoice link the bot gave them and presses Pay: a pre_checkout_query update, its id.

        The receipt, once the bot accepts, arrives in the user's private chat with the bot."""
        invoice = self.links.get(link)
        if invoice is None:
            raise ValueError(f"no invoice link {link}")
        chat = private_chat(user)
        self.state.remember(chat, user)
        query_id = str(secrets.randbits(63))
        self.queries[query_id] = _Query(user, chat, invoice, self.clock(), receipt_delivered=receipt_delivered)
        self.state.push_update("pre_checkout_query", {
            "id": query_id, "from": user.to_dict(), "currency": invoice["currency"],
            "total_amount": invoice["total_amount"], "invoice_payload": invoice["payload"]})
        return query_id

    def subscription_of(self, user: User) -> Subscription:
        """The user's one subscription to the bot (a test's shortcut)."""
        [found] = [sub for sub in self.subscriptions.values() if sub.user.id == user.id]
        return found

    def renew(self, subscription_id: str, *, receipt_delivered: bool = True) -> str:
        """Telegram renews a subscription at the end of its period: a new charge (its id returned) and receipt."""
        subscription = self.subscriptions[subscription_id]
        if subscription.canceled_by_bot:
            raise ValueError(f"subscription {subscription_id} was cancelled: Telegram does not renew it")
        charged_at = subscription.expires_at  # Telegram charges when the period ends (the test's clock jumps there)
        subscription.expires_at += subscription.period
        return self._charge(subscription.user, subscription.chat, subscription.amount, subscription.payload,
                            subscription, first=False, receipt_delivered=receipt_delivered, date=charged_at)

    def answer_to(self, query_id: str) -> dict[str, Any] | None:
        """The bot's answer to a pre-checkout query, once it gave one."""
        return self.queries[query_id].answer

    def refund_outside(self, charge_id: str) -> None:
        """The Stars of a payment go back without the bot's /refund (the operator used another tool)."""
        charge = self.charges[charge_id]
        assert charge.refunded_at is None, f"{charge_id} was refunded already"
        charge.refunded_at = max(int(time.time()), charge.date + 1)  # listed after its payment

    def redeliver(self, charge_id: str) -> None:
        """Telegram delivers a successful_payment update again (as after a crash before its offset was confirmed)."""
        self.state.push_update("message", self.receipts[charge_id])

    def _pay(self, query: _Query) -> None:
        invoice, now = query.invoice, int(time.time())
        subscription = None
        if invoice.get("subscription_period"):
            period = invoice["subscription_period"]
            subscription = Subscription("", query.user, query.chat, invoice["total_amount"], invoice["payload"],
                                        period, now + period)
        self._charge(query.user, query.chat, invoice["total_amount"], invoice["payload"], subscription, first=True,
                     receipt_delivered=query.receipt_delivered, date=now)

    def _charge(self, user: User, chat: Chat, amount: int, payload: str, subscription: Subscription | None, *,
                first: bool, receipt_delivered: bool, date: int | None = None) -> str:
        charge_id = f"stxFake{next(self._charge_numbers):06d}{secrets.token_hex(4)}"
        charge = Charge(charge_id, user, chat, amount, payload, date or int(time.time()),
                        subscription_period=subscription.period if subscription else None)
        self.charges[charge_id] = charge
        receipt: dict[str, Any] = {"currency": STARS, "total_amount": amount, "invoice_payload": payload,
                                   "telegram_payment_charge_id": charge_id, "provider_payment_charge_id": ""}
        if subscription is not None:
            if first:
                subscription.charge_id = charge_id
                self.subscriptions[charge_id] = subscription
            subscription.charge_ids.append(charge_id)
            receipt |= {"subscription_expiration_date": subscription.expires_at, "is_recurring": True}
            if first:
                receipt["is_first_recurring"] = True
        message = self.state.add_message(chat, user, "successful_payment", extra={"successful_payment": receipt})
        self.receipts[charge_id] = message.to_dict()
        if receipt_delivered:
            self.state.push_update("message", self.receipts[charge_id])
        return charge_id


def _checked_invoice(params: dict[str, Any]) -> dict[str, Any]:
    """A Stars invoice's fields as sendInvoice and createInvoiceLink check them, or Telegram's 400."""
    title, description = str_param(params, "title") or "", str_param(params, "description") or ""
    payload = str_param(params, "payload") or ""
    if not 1 <= len(title) <= 32:
        raise bad_request("INVOICE_TITLE_INVALID" if title else "title is empty")
    if not 1 <= len(description) <= 255:
        raise bad_request("INVOICE_DESCRIPTION_INVALID" if description else "description is empty")
    if not 1 <= len(payload.encode()) <= 128:
        raise bad_request("INVOICE_PAYLOAD_INVALID" if payload else "payload is empty")
    if str_param(params, "currency") != STARS:
        raise bad_request("CURRENCY_INVALID: this fake serves payments in Telegram Stars (XTR) only")
    if str_param(params, "provider_token"):
        raise bad_request("PAYMENT_PROVIDER_INVALID: Stars invoices take an empty provider_token")
    if params.get("max_tip_amount") or params.get("suggested_tip_amounts"):
        raise bad_request("STARS_INVOICE_INVALID: Stars invoices take no tips")
    prices = params.get("prices")
    if not isinstance(prices, list) or len(prices) != 1 or not isinstance(prices[0], dict):
        raise bad_request("STARS_INVOICE_INVALID: a Stars invoice has exactly one price")
    amount, label = prices[0].get("amount"), prices[0].get("label")
    if not isinstance(label, str) or not label:
        raise bad_request("can't parse prices JSON object")
    if isinstance(amount, bool) or not isinstance(amount, int) or not 1 <= amount <= MOST_STARS:
        raise bad_request("CURRENCY_TOTAL_AMOUNT_INVALID")
    return {"title": title, "description": description, "currency": STARS, "total_amount": amount, "payload": payload}
