"""The fake Bot API's Telegram Stars, driven by python-telegram-bot's Bot: as strict as Telegram's."""

from __future__ import annotations

import datetime as dtm
from collections.abc import AsyncIterator

import pytest
import telegram
from telegram import LabeledPrice
from telegram.error import BadRequest

from bot.tg import reconcile
from tests.fakes.telegram import FakeTelegram, User, private_chat
from tests.fakes.telegram_payments import PRE_CHECKOUT_DEADLINE_S

ALICE = User(id=1001, first_name="Alice", username="alice")
CHAT = private_chat(ALICE)


@pytest.fixture
async def fake() -> AsyncIterator[FakeTelegram]:
    async with FakeTelegram() as fake:
        fake.user_sends(CHAT, ALICE, text="/buy")
        yield fake


async def invoice(bot: telegram.Bot, **changes: object) -> telegram.Message:
    fields: dict = {"title": "10 credits", "description": "Credits", "payload": "credits:10:50", "currency": "XTR",
                    "prices": [LabeledPrice("10 credits", 50)]} | changes
    return await bot.send_invoice(CHAT.id, **fields)


@pytest.mark.parametrize(("changes", "error"), [
    ({"currency": "USD"}, "CURRENCY_INVALID"),
    ({"provider_token": "123:TEST"}, "PAYMENT_PROVIDER_INVALID"),
    ({"prices": [LabeledPrice("a", 20), LabeledPrice("b", 30)]}, "STARS_INVOICE_INVALID"),
    ({"prices": [LabeledPrice("a", 0)]}, "CURRENCY_TOTAL_AMOUNT_INVALID"),
    ({"title": "x" * 33}, "INVOICE_TITLE_INVALID"),
    ({"payload": "p" * 129}, "INVOICE_PAYLOAD_INVALID"),
])
async def test_invoices_that_are_not_plain_stars_invoices_are_refused(bot, changes, error):
    with pytest.raises(BadRequest, match="(?i)" + error):
        await invoice(bot, **changes)


async def test_a_payment_from_invoice_to_refund(fake: FakeTelegram, bot: telegram.Bot):
    sent = await invoice(bot)
    assert sent.invoice.currency == "XTR" and sent.invoice.total_amount == 50
    query_id = fake.payments.user_pays(CHAT, ALICE, sent.message_id)
    [update] = await bot.get_updates(offset=-1, timeout=0)
    assert update.pre_checkout_query.id == query_id and update.pre_checkout_query.invoice_payload == "credits:10:50"
    assert await bot.answer_pre_checkout_query(query_id, ok=True)
    with pytest.raises(BadRequest, match="(?i)query is too old"):  # answered once only
        await bot.answer_pre_checkout_query(query_id, ok=True)
    [paid] = await bot.get_updates(offset=update.update_id + 1, timeout=0)
    receipt = paid.message.successful_payment
    assert receipt.total_amount == 50 and receipt.telegram_payment_charge_id in fake.payments.charges

    with pytest.raises(BadRequest, match="(?i)CHARGE_NOT_FOUND"):
        await bot.refund_star_payment(ALICE.id, "stxNoSuchCharge")
    assert await bot.refund_star_payment(ALICE.id, receipt.telegram_payment_charge_id)
    with pytest.raises(BadRequest, match="(?i)CHARGE_ALREADY_REFUNDED"):
        await bot.refund_star_payment(ALICE.id, receipt.telegram_payment_charge_id)
    transactions = (await bot.get_star_transactions()).transactions
    assert [t.amount for t in transactions] == [50, 50]
    assert transactions[0].source.user.id == ALICE.id and transactions[1].receiver.user.id == ALICE.id


async def test_a_late_pre_checkout_answer_fails_and_nothing_is_paid(fake: FakeTelegram, bot: telegram.Bot):
    sent = await invoice(bot)
    now = [1000.0]
    fake.payments.clock = lambda: now[0]
    query_id = fake.payments.user_pays(CHAT, ALICE, sent.message_id)
    now[0] += PRE_CHECKOUT_DEADLINE_S + 0.5
    with pytest.raises(BadRequest, match="(?i)query is too old"):
        await bot.answer_pre_checkout_query(query_id, ok=True)
    assert fake.payments.charges == {}
    with pytest.raises(BadRequest, match="(?i)error_message is empty"):
        await bot.answer_pre_checkout_query(fake.payments.user_pays(CHAT, ALICE, sent.message_id), ok=False)


async def test_a_lost_receipt_is_charged_and_listed_and_the_bot_reads_every_page_in_any_order(
        fake: FakeTelegram, bot: telegram.Bot, monkeypatch: pytest.MonkeyPatch):
    for n in range(3):
        sent = await invoice(bot)
        query_id = fake.payments.user_pays(CHAT, ALICE, sent.message_id, receipt_delivered=n != 1)
        assert await bot.answer_pre_checkout_query(query_id, ok=True)
    receipts = [update.message.successful_payment.telegram_payment_charge_id
                for update in await bot.get_updates(timeout=0)
                if update.message is not None and update.message.successful_payment is not None]
    assert len(receipts) == 2 and len(fake.payments.charges) == 3  # the second was charged, its update never sent
    fake.payments.refund_outside(receipts[0])
    fake.payments.newest_first = True
    [refund, newest] = (await bot.get_star_transactions(offset=0, limit=2)).transactions
    assert refund.id == receipts[0] and refund.receiver.user.id == ALICE.id and refund.source is None
    assert newest.source.invoice_payload == "credits:10:50"

    monkeypatch.setattr(reconcile, "PAGE", 2)  # four transactions: two pages, the refund before its payment
    payments = await reconcile.star_payments(bot)
    assert sorted(payment.charge_id for payment in payments) == sorted(fake.payments.charges)
    assert [payment.charge_id for payment in payments if payment.refunded] == [receipts[0]]
    assert {(payment.user_id, payment.stars, payment.payload) for payment in payments} == {
        (ALICE.id, 50, "credits:10:50")}


async def link(bot: telegram.Bot, **changes: object) -> str:
    fields: dict = {"title": "300 credits a month", "description": "Credits every 30 days",
                    "payload": "subscription:300:250", "currency": "XTR", "prices": [LabeledPrice("Plan", 250)],
                    "subscription_period": 2592000} | changes
    return await bot.create_invoice_link(**fields)


@pytest.mark.parametrize(("changes", "error"), [
    ({"subscription_period": 86400}, "SUBSCRIPTION_PERIOD_INVALID"),
    ({"subscription_period": 2592001}, "SUBSCRIPTION_PERIOD_INVALID"),
    ({"prices": [LabeledPrice("a", 200), LabeledPrice("b", 50)]}, "STARS_INVOICE_INVALID"),
    ({"prices": [LabeledPrice("a", 10001)]}, "CURRENCY_TOTAL_AMOUNT_INVALID"),
    ({"currency": "USD"}, "CURRENCY_INVALID"),
])
async def test_subscription_links_take_only_thirty_days_and_one_price_of_at_most_10000_stars(bot, changes, error):
    with pytest.raises(BadRequest, match="(?i)" + error):
        await link(bot, **changes)


async def test_a_subscription_renews_with_new_charge_ids_until_cancelled_and_is_listed(
        fake: FakeTelegram, bot: telegram.Bot):
    url = await link(bot, subscription_period=dtm.timedelta(days=30))  # PTB sends a timedelta as its seconds
    assert url.startswith("https://t.me/$") and fake.payments.links[url]["subscription_period"] == 2592000
    query_id = fake.payments.user_pays_link(ALICE, url)
    [update] = await bot.get_updates(offset=-1, timeout=0)
    assert update.pre_checkout_query.id == query_id
    assert await bot.answer_pre_checkout_query(query_id, ok=True)
    [paid] = await bot.get_updates(offset=update.update_id + 1, timeout=0)
    first = paid.message.successful_payment
    assert first.is_recurring and first.is_first_recurring and paid.message.chat.id == ALICE.id
    subscription = fake.payments.subscription_of(ALICE)
    assert subscription.charge_id == first.telegram_payment_charge_id
    assert first.subscription_expiration_date.timestamp() == subscription.expires_at

    renewal = fake.payments.renew(subscription.charge_id)
    [renewed] = await bot.get_updates(offset=paid.update_id + 1, timeout=0)
    receipt = renewed.message.successful_payment
    assert receipt.telegram_payment_charge_id == renewal != first.telegram_payment_charge_id
    assert receipt.is_recurring and not receipt.is_first_recurring
    assert receipt.subscription_expiration_date - first.subscription_expiration_date == dtm.timedelta(days=30)

    with pytest.raises(BadRequest, match="(?i)CHARGE_NOT_FOUND"):  # another user's, or no subscription
        await bot.edit_user_star_subscription(ALICE.id + 1, subscription.charge_id, True)
    assert await bot.edit_user_star_subscription(ALICE.id, subscription.charge_id, True)
    with pytest.raises(ValueError, match="does not renew"):
        fake.payments.renew(subscription.charge_id)
    assert await bot.edit_user_star_subscription(ALICE.id, subscription.charge_id, False)
    fake.payments.renew(subscription.charge_id)

    payments = await reconcile.star_payments(bot)
    assert len(payments) == 3 and {payment.subscription_period for payment in payments} == {2592000}
    dates = sorted(payment.date for payment in payments)
    assert dates[2] - dates[1] == dates[1] - dates[0] == dtm.timedelta(days=30)  # each charged as a period ends
