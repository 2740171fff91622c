"""Money end to end, in long polling on SQLite and in webhook mode on PostgreSQL: a payment is never dropped
by flood control nor refused by the allowlist's plumbing, a payment whose successful_payment never arrived
is credited once from Telegram's record, and a chat identity gets no free allowance."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from bot.config import Settings
from bot.credits import CreditPolicy, CreditService
from bot.i18n import tr
from bot.store import create_engine, session_factory
from bot.tg import texts as bot_texts
from tests.e2e.conftest import ALICE, BOB, RunningBot
from tests.e2e.helpers import BOTH_MODES, fill_pool, mode_settings, settled, texts, wait_media, wait_text
from tests.e2e.test_credits import books
from tests.fakes import samples
from tests.fakes.telegram import Chat, FakeTelegram, User, channel, group, private_chat
from tests.fakes.telegram_anonymous import anonymous_admin_sends, channel_sends

PACKS = "10:50,100:400"
CAROL = User(1003, "Carol", username="carol")
DAVE = User(1004, "Dave", username="dave", language_code="es")
CLUB = group(-100900, "Photo club")
NEWS, PHOTOS = channel(-100801, "News"), channel(-100802, "Photos")
#: bot_admins in every mode: Alice
ADMINS = "1001"


@pytest.fixture(params=BOTH_MODES)
async def settings(request: pytest.FixtureRequest, tmp_path, telegram: FakeTelegram, sandbox) -> Settings:
    """Long polling on an SQLite file, or webhook mode on PostgreSQL: Stars packs on sale, no free credits."""
    return await mode_settings(request, tmp_path, telegram, sandbox, worker_id="payments", bot_admins=ADMINS,
                                  credit_packs=PACKS, free_credits_per_day=0)


async def started(settings: Settings, telegram: FakeTelegram, **changes: object) -> RunningBot:
    """The bot, with Telegram's send limits kept only where a test asks (the fake enforces none here)."""
    # a short grace: replies waiting for a flooded group's send limit are not what these tests wait for
    running = RunningBot(settings.model_copy(update={"telegram_rate_limit": False, **changes}), telegram, grace=1.0)
    await running.start()
    return running


async def ledger_of(settings: Settings) -> tuple[CreditService, object]:
    engine = create_engine(settings.database_url)
    return CreditService(session_factory(engine), CreditPolicy({})), engine


async def credits_of(settings: Settings, user_id: int) -> int:
    """A user's bought credits, read from the bot's database."""
    service, engine = await ledger_of(settings)
    try:
        return (await service.balance(user_id, chat_id=user_id, chat_type="private")).credits
    finally:
        await engine.dispose()


async def invoice_in(telegram: FakeTelegram, chat: Chat, user: User) -> int:
    """The user asks for the 10-credit pack with /buy and its button; the id of the invoice the bot sends."""
    telegram.user_sends(chat, user, text="/buy@aiart_test_bot")
    await telegram.wait_for(lambda: any(m.reply_markup for m in telegram.sent(chat.id)))
    menu = [m for m in telegram.sent(chat.id) if m.reply_markup][-1]
    known = set(telegram.payments.invoices)
    telegram.user_presses(chat, user, menu.message_id, "buy:10:50")
    await telegram.wait_for(lambda: set(telegram.payments.invoices) - known)
    [(_, invoice_id)] = set(telegram.payments.invoices) - known
    return invoice_id


async def pays(telegram: FakeTelegram, chat: Chat, user: User, invoice_id: int, **how: bool) -> dict:
    """The user pays; the bot's answer to the pre-checkout query, which Telegram waits 10 s for."""
    query = telegram.payments.user_pays(chat, user, invoice_id, **how)
    await telegram.wait_for(lambda: telegram.payments.answer_to(query) is not None, 10)
    return telegram.payments.answer_to(query)


async def test_a_payment_made_while_another_member_floods_the_group_is_credited_once(settings, telegram, caplog):
    running = await started(settings, telegram, telegram_rate_limit=True)
    caplog.set_level(logging.INFO)
    try:
        invoice_id = await invoice_in(telegram, CLUB, ALICE)
        for n in range(40):  # each answer waits for the group's send limit: the chat holds its share and more
            telegram.user_sends(CLUB, BOB, text=f"/help@aiart_test_bot {n}")
        assert await pays(telegram, CLUB, ALICE, invoice_id) == {"ok": True, "error_message": None}
        [charge] = telegram.payments.charges
        assert await settled(lambda: credits_of(running.settings, ALICE.id), 10) == 10
        assert "is flooding the bot" in caplog.text  # the flood did drop Bob's messages
        telegram.payments.redeliver(charge)  # Telegram sends the receipt again, still during the flood
        await telegram.wait_for(lambda: "was already credited" in caplog.text, 10)
    finally:
        await running.stop()
    assert await credits_of(running.settings, ALICE.id) == 10
    assert await books(running.settings) == []


async def test_with_an_allowlist_an_allowed_user_pays_and_a_refused_one_is_told_in_their_language(settings, telegram):
    running = await started(settings, telegram, bot_allowed_users=frozenset({CAROL.id}))
    carol = private_chat(CAROL)
    try:
        invoice_id = await invoice_in(telegram, carol, CAROL)
        assert await pays(telegram, carol, CAROL, invoice_id) == {"ok": True, "error_message": None}
        await wait_text(telegram, carol.id, "credits added")
        # Dave is on no list; the invoice reached him (forwarded): he is refused at once, in Spanish
        answer = await pays(telegram, carol, DAVE, invoice_id)
        assert answer == {"ok": False, "error_message": tr("es", bot_texts.PAYMENT_NOT_ALLOWED)}
        assert answer["error_message"] != bot_texts.PAYMENT_NOT_ALLOWED
        assert [charge.user.id for charge in telegram.payments.charges.values()] == [CAROL.id]
    finally:
        await running.stop()
    assert await credits_of(running.settings, CAROL.id) == 10
    assert await books(running.settings) == []


def star_listings(telegram: FakeTelegram) -> int:
    return sum(1 for call in telegram.calls if call.method == "getStarTransactions" and call.status == 200)


async def test_a_payment_whose_receipt_never_arrived_is_credited_once_from_telegrams_record(settings, telegram):
    telegram.payments.newest_first = True  # the Bot API says oldest first: the bot must not rely on either
    carol, bob = private_chat(CAROL), private_chat(BOB)
    running = await started(settings, telegram)
    try:
        lost = await pays(telegram, carol, CAROL, await invoice_in(telegram, carol, CAROL), receipt_delivered=False)
        assert lost["ok"]
        assert await pays(telegram, bob, BOB, await invoice_in(telegram, bob, BOB)) == {"ok": True,
                                                                                       "error_message": None}
        await wait_text(telegram, bob.id, "credits added")
        [carols, bobs] = telegram.payments.charges
        telegram.payments.refund_outside(bobs)  # the operator refunded Bob with another tool
    finally:
        await running.stop()
    assert await credits_of(running.settings, CAROL.id) == 0  # the bot never heard of Carol's payment

    for _ in range(2):  # the next start credits it; a second restart finds nothing more to do
        listed = star_listings(telegram)
        running = await started(settings, telegram)
        try:
            await telegram.wait_for(lambda: star_listings(telegram) > listed)
        finally:
            await running.stop()  # lets the reconciliation it started finish
        assert await credits_of(running.settings, CAROL.id) == 10
        assert await credits_of(running.settings, BOB.id) == 0
        assert len([text for text in texts(telegram, carol.id) if "had not reached me" in text]) == 1
    assert await books(running.settings) == []
    assert telegram.payments.charges[carols].refunded_at is None


async def test_a_channel_or_an_anonymous_admin_gets_no_free_allowance_only_the_pool(settings, telegram):
    running = await started(settings, telegram, free_credits_per_day=5)
    refusal = "only this group's pool pays"
    upscale = {"photo": samples.jpeg(120, 80), "caption": "/upscale@aiart_test_bot 2"}
    try:
        channel_sends(telegram, CLUB, NEWS, **upscale)
        await wait_text(telegram, CLUB.id, refusal)  # five free credits a day for people, none for a channel
        await fill_pool(running.settings.database_url, CLUB.id, 3, cap=1)
        channel_sends(telegram, CLUB, NEWS, **upscale)
        channel_sends(telegram, CLUB, PHOTOS, **upscale)
        anonymous_admin_sends(telegram, CLUB, **upscale)
        await wait_media(telegram, CLUB.id, 3)
        channel_sends(telegram, CLUB, NEWS, **upscale)  # the cap counts the channel as one member
        await telegram.wait_for(lambda: sum(refusal in text for text in texts(telegram, CLUB.id)) == 2)
    finally:
        await running.stop()
    service, engine = await ledger_of(running.settings)
    try:
        shown = await service.balance(NEWS.id, chat_id=CLUB.id, chat_type=CLUB.type)
    finally:
        await engine.dispose()
    assert (shown.credits, shown.free_left, shown.free_per_day, shown.pool) == (0, 0, 0, 0)
    assert await books(running.settings) == []


async def test_a_payment_credited_to_someone_else_is_given_to_its_payer_and_the_admins_are_told(settings, telegram):
    """Issue 28, finding 6: credits went to the receipt's sender, and reconciliation never compared the payer."""
    from sqlalchemy import update

    from bot.store.models import accounts_table, ledger_table

    carol, alice = private_chat(CAROL), private_chat(ALICE)
    running = await started(settings, telegram)
    try:
        telegram.user_sends(alice, ALICE, text="/start")  # the admin has a chat with the bot
        await pays(telegram, carol, CAROL, await invoice_in(telegram, carol, CAROL))
        await wait_text(telegram, carol.id, "credits added")
        [charge] = telegram.payments.charges
    finally:
        await running.stop()
    # the receipt had been credited to Bob (who did not pay): the books add up, but to the wrong person
    engine = create_engine(running.settings.database_url)
    try:
        async with engine.begin() as connection:
            await connection.execute(update(ledger_table).where(ledger_table.c.charge_id == charge)
                                     .values(owner_id=BOB.id))
            await connection.execute(update(accounts_table).where(accounts_table.c.kind == "user",
                                                                  accounts_table.c.owner_id == CAROL.id)
                                     .values(balance=0))
            await connection.execute(accounts_table.insert().values(kind="user", owner_id=BOB.id, balance=10,
                                                                    updated_at=datetime.now(UTC)))
    finally:
        await engine.dispose()
    assert (await credits_of(running.settings, CAROL.id), await credits_of(running.settings, BOB.id)) == (0, 10)
    running = await started(settings, telegram)
    try:
        notice = await wait_text(telegram, alice.id, "did not match Telegram's record")
    finally:
        await running.stop()
    assert charge in notice and str(CAROL.id) in notice and f"{BOB.id}: 10" in notice
    assert (await credits_of(running.settings, CAROL.id), await credits_of(running.settings, BOB.id)) == (10, 0)
    assert await books(running.settings) == []
