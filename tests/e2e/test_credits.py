"""Credits end to end: Stars packs bought and credited once, jobs paid per image, failures refunded, refunds of
payments, group pools before personal credits, and the books audited after every story."""

from __future__ import annotations

import pytest

from bot.credits import audit
from bot.store import create_engine, session_factory
from tests.e2e.conftest import ALICE, BOB, RunningBot
from tests.e2e.helpers import media, texts, wait_media, wait_text
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import Chat, User, group, private_chat

PACKS = "10:50,100:400"
CAROL = User(1003, "Carol", username="carol")


async def books(settings) -> list[str]:
    """What the ledger audit finds wrong (empty: every balance adds up, every job was settled right)."""
    engine = create_engine(settings.database_url)
    try:
        async with session_factory(engine)() as session:
            return await audit(session)
    finally:
        await engine.dispose()


async def started(settings, telegram: FakeTelegram, **changes: object) -> RunningBot:
    running = RunningBot(settings.model_copy(update={"credit_packs": PACKS, "free_credits_per_day": 0, **changes}),
                         telegram)
    await running.start()
    return running


async def balance(telegram: FakeTelegram, chat: Chat, user: User) -> str:
    """The /balance reply the user gets now."""
    before = len(texts(telegram, chat.id))
    telegram.user_sends(chat, user, text="/balance")
    await telegram.wait_for(lambda: any("Your credits" in t for t in texts(telegram, chat.id)[before:]))
    return next(t for t in texts(telegram, chat.id)[before:] if "Your credits" in t)


async def buy(telegram: FakeTelegram, chat: Chat, user: User, pack: str = "buy:10:50") -> str:
    """The user buys a pack through /buy, its button, the invoice and the payment; returns the charge id."""
    known = set(telegram.payments.charges)
    telegram.user_sends(chat, user, text="/buy")
    await telegram.wait_for(lambda: any(m.reply_markup for m in telegram.sent(chat.id)))
    menu = [m for m in telegram.sent(chat.id) if m.reply_markup][-1]
    invoices = len(telegram.payments.invoices)
    telegram.user_presses(chat, user, menu.message_id, pack)
    await telegram.wait_for(lambda: len(telegram.payments.invoices) > invoices)
    (chat_id, invoice_id), invoice = list(telegram.payments.invoices.items())[-1]
    assert invoice["currency"] == "XTR" and chat_id == chat.id
    query = telegram.payments.user_pays(chat, user, invoice_id)
    await telegram.wait_for(lambda: telegram.payments.answer_to(query) is not None)
    assert telegram.payments.answer_to(query) == {"ok": True, "error_message": None}
    [charge] = set(telegram.payments.charges) - known
    await wait_text(telegram, chat.id, "credits added")
    return charge


async def test_a_bought_pack_pays_for_a_headshot_per_image_and_a_spent_payment_cannot_be_refunded(settings, telegram):
    running = await started(settings, telegram)
    bob, admin = private_chat(BOB), private_chat(ALICE)
    try:
        charge = await buy(telegram, bob, BOB)
        assert "Your credits: 10" in await balance(telegram, bob, BOB)
        # Telegram delivers the same successful_payment again: nothing more is added
        telegram.payments.redeliver(charge)
        await telegram.wait_for(lambda: telegram.pending_updates == 0)
        assert "Your credits: 10" in await balance(telegram, bob, BOB)

        telegram.user_sends(bob, BOB, photo=samples.jpeg(400, 400), caption="/headshot business 4")
        results = await wait_media(telegram, bob.id, 4)
        assert any("4 credits" in (m.caption or "") for m in results)
        assert "Your credits: 6" in await balance(telegram, bob, BOB)

        telegram.user_sends(admin, ALICE, text=f"/refund {charge}")
        refusal = await wait_text(telegram, admin.id, "can't refund")
        assert "10 credits were already spent" in refusal and "6 left" in refusal
        assert telegram.payments.charges[charge].refunded_at is None
        assert "Your credits: 6" in await balance(telegram, bob, BOB)
    finally:
        await running.stop()
    assert await books(running.settings) == []


async def test_an_unspent_payment_is_refunded_once(settings, telegram):
    running = await started(settings, telegram)
    bob, admin = private_chat(BOB), private_chat(ALICE)
    try:
        charge = await buy(telegram, bob, BOB)
        telegram.user_sends(bob, BOB, text=f"/refund {charge}")  # not an admin
        await wait_text(telegram, bob.id, "Only the bot's admins can use /refund.")
        telegram.user_sends(admin, ALICE, text=f"/refund {charge}")
        await wait_text(telegram, admin.id, "Refunded")
        assert telegram.payments.charges[charge].refunded_at is not None
        assert "Your credits: 0" in await balance(telegram, bob, BOB)
        telegram.user_sends(admin, ALICE, text=f"/refund {charge}")
        await wait_text(telegram, admin.id, "already refunded")
        telegram.user_sends(admin, ALICE, text="/refund stxNoSuchCharge")
        await wait_text(telegram, admin.id, "no payment")
    finally:
        await running.stop()
    assert await books(running.settings) == []


async def test_a_failed_job_gives_its_credits_back(settings, telegram, sandbox, monkeypatch):
    running = await started(settings, telegram, free_credits_per_day=3)
    bob = private_chat(BOB)
    try:
        monkeypatch.setattr(sandbox.faults, "fails_task", lambda: True)
        telegram.user_sends(bob, BOB, photo=samples.jpeg(400, 400), caption="/headshot business 3")
        await wait_text(telegram, bob.id, "couldn't process")
        assert "Free today: 3 of 3" in await balance(telegram, bob, BOB)
        monkeypatch.setattr(sandbox.faults, "fails_task", lambda: False)
        telegram.user_sends(bob, BOB, photo=samples.jpeg(400, 400), caption="/headshot business 3")
        await wait_media(telegram, bob.id, 3)
        assert "Free today: 0 of 3" in await balance(telegram, bob, BOB)
    finally:
        await running.stop()
    assert await books(running.settings) == []


@pytest.mark.parametrize("packs", [PACKS, ""])
async def test_a_user_without_credits_is_told_how_to_get_more(settings, telegram, packs):
    running = await started(settings, telegram, credit_packs=packs, free_credits_per_day=1)
    bob = private_chat(BOB)
    try:
        telegram.user_sends(bob, BOB, photo=samples.jpeg(400, 400), caption="/headshot business 2")
        refusal = await wait_text(telegram, bob.id, "Not enough credits")
        assert "costs 2 credits" in refusal and "you can spend 1 now" in refusal
        assert "Tomorrow you get 1 free credit again" in refusal
        assert ("/buy" in refusal) == bool(packs)
        telegram.user_sends(bob, BOB, text="/buy")
        if not packs:
            await wait_text(telegram, bob.id, "isn't available")
        assert media(telegram, bob.id) == []
    finally:
        await running.stop()
    assert await books(running.settings) == []


async def test_members_spend_the_group_pool_first_within_the_daily_cap(settings, telegram):
    running = await started(settings, telegram)
    club = group(-100777, "Photo club")
    telegram.members.make_admin(club, ALICE)
    telegram.members.join(club, BOB)
    try:
        await buy(telegram, private_chat(ALICE), ALICE)
        await buy(telegram, private_chat(BOB), BOB)
        telegram.user_sends(club, BOB, text="/pool add 5")  # not an admin
        await wait_text(telegram, club.id, "Only this group's admins")
        telegram.user_sends(club, ALICE, text="/pool add 6")
        await wait_text(telegram, club.id, "it now holds 6")
        telegram.user_sends(club, ALICE, text="/pool cap 2")
        await wait_text(telegram, club.id, "up to 2 credits a day")
        for count in (1, 2, 3):
            telegram.user_sends(club, BOB, photo=samples.jpeg(200, 200), caption="/upscale 2")
            await wait_media(telegram, club.id, count)
        shown = await balance(telegram, club, BOB)
        assert "Your credits: 9" in shown and "pool: 4 (you can use 0 of it today)" in shown
        assert "Your credits: 4" in await balance(telegram, private_chat(ALICE), ALICE)
    finally:
        await running.stop()
    assert await books(running.settings) == []
