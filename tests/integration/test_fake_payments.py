"""The fake Bot API's Telegram Stars, driven by python-telegram-bot's Bot: as strict as Telegram's."""

from __future__ import annotations

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
