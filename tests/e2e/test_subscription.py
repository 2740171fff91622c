"""The monthly plan end to end, in long polling on SQLite and in webhook mode on PostgreSQL: subscribing, a renewal,
a redelivered payment, a renewal made while the bot was down (reconciled once), cancelling and resuming across a
restart, an admin's refund of a renewal; and `python -m bot audit` finding every balance exact after all of it."""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from datetime import UTC, datetime

import pytest

from bot import runtime
from bot.config import Settings
from bot.credits import CreditPolicy, CreditService
from bot.store import create_engine, session_factory
from tests.e2e.conftest import ALICE, BOB, RunningBot
from tests.e2e.helpers import BOTH_MODES, mode_settings, texts, wait_media, wait_text
from tests.e2e.test_credits import books
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User, group, private_chat
from tests.harness import process_env

PLAN = "300:250"
CAROL = User(1003, "Carol", username="carol", language_code="ru")
#: bot_admins: Alice
ADMINS = "1001"


@pytest.fixture(params=BOTH_MODES)
async def settings(request: pytest.FixtureRequest, tmp_path, telegram: FakeTelegram, sandbox) -> Settings:
    """Long polling on an SQLite file, or webhook mode on PostgreSQL: a pack and the plan on sale, no free credits."""
    return await mode_settings(request, tmp_path, telegram, sandbox, worker_id="plan", bot_admins=ADMINS,
                                  credit_packs="10:50", credit_subscription=PLAN, free_credits_per_day=0)


@pytest.fixture(autouse=True)
def short_grace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime, "SHUTDOWN_GRACE_S", 1.0)


async def started(settings: Settings, telegram: FakeTelegram) -> RunningBot:
    running = RunningBot(settings.model_copy(update={"telegram_rate_limit": False}), telegram)
    await running.start()
    return running


async def plan_credits(settings: Settings, user_id: int) -> tuple[int, int]:
    """A user's (plan credits left this period, bought credits), read from the bot's database."""
    engine = create_engine(settings.database_url)
    try:
        shown = await CreditService(session_factory(engine), CreditPolicy({})).balance(
            user_id, chat_id=user_id, chat_type="private")
    finally:
        await engine.dispose()
    return shown.plan, shown.credits


def buttons(message) -> dict[str, dict]:
    """A message's inline buttons by their callback data (or url)."""
    return {button.get("callback_data") or button["url"]: button
            for row in (message.reply_markup or {}).get("inline_keyboard", []) for button in row}


async def subscribe(telegram: FakeTelegram, user: User) -> str:
    """The user opens /buy, presses the plan's button, opens the link and pays: the subscription's id."""
    chat = private_chat(user)
    telegram.user_sends(chat, user, text="/buy")
    await telegram.wait_for(lambda: any(f"plan:{PLAN}" in buttons(m) for m in telegram.sent(chat.id)))
    menu = [m for m in telegram.sent(chat.id) if f"plan:{PLAN}" in buttons(m)][-1]
    assert "buy:10:50" in buttons(menu) and "subx:show" in buttons(menu)  # the plan beside the packs
    links = len(telegram.payments.links)
    telegram.user_presses(chat, user, menu.message_id, f"plan:{PLAN}")
    await telegram.wait_for(lambda: len(telegram.payments.links) > links)
    link, invoice = list(telegram.payments.links.items())[-1]
    assert (invoice["subscription_period"], invoice["total_amount"], invoice["currency"]) == (2592000, 250, "XTR")
    await telegram.wait_for(lambda: any(link in buttons(m) for m in telegram.sent(chat.id)))
    query = telegram.payments.user_pays_link(user, link)
    await telegram.wait_for(lambda: telegram.payments.answer_to(query) is not None)
    assert telegram.payments.answer_to(query) == {"ok": True, "error_message": None}
    return telegram.payments.subscription_of(user).charge_id


async def subscription_reply(telegram: FakeTelegram, user: User, fragment: str):
    """The user sends /subscription; the reply that contains `fragment`."""
    chat = private_chat(user)
    before = len(telegram.sent(chat.id))
    telegram.user_sends(chat, user, text="/subscription")
    await telegram.wait_for(lambda: any(fragment in (m.text or "") for m in telegram.sent(chat.id)[before:]))
    return next(m for m in telegram.sent(chat.id)[before:] if fragment in (m.text or ""))


async def press(telegram: FakeTelegram, user: User, message, data: str, fragment: str) -> None:
    """The user presses a button of `message`; waits until the message reads `fragment`."""
    telegram.user_presses(private_chat(user), user, message.message_id, data)
    await telegram.wait_for(
        lambda: fragment in ((telegram.message(private_chat(user).id, message.message_id) or {}).get("text") or ""))


async def test_subscribe_renew_redelivered_cancel_and_resume_across_a_restart(settings, telegram, caplog):
    caplog.set_level(logging.INFO)
    bob = private_chat(BOB)
    running = await started(settings, telegram)
    try:
        subscription = await subscribe(telegram, BOB)
        await wait_text(telegram, bob.id, "Welcome to the plan: 300 credits until")
        assert await plan_credits(running.settings, BOB.id) == (300, 0)
        telegram.payments.redeliver(subscription)  # Telegram sends the first receipt again
        await telegram.wait_for(lambda: f"plan payment {subscription} was already credited" in caplog.text)

        telegram.user_sends(bob, BOB, photo=samples.jpeg(160, 120), caption="/upscale 2")
        await wait_media(telegram, bob.id)
        assert await plan_credits(running.settings, BOB.id) == (299, 0)  # the plan pays before bought credits

        renewal = telegram.payments.renew(subscription)  # 30 days on: Telegram charges again by itself
        assert renewal != subscription
        await wait_text(telegram, bob.id, "Your plan renewed: 300 credits until")
        # the last period's 299 unused credits ended with it; the new period's 300 are there once
        assert await plan_credits(running.settings, BOB.id) == (300, 0)
        telegram.payments.redeliver(renewal)
        await telegram.wait_for(lambda: f"plan payment {renewal} was already credited" in caplog.text)

        shown = await subscription_reply(telegram, BOB, "Plan credits left this period: 300")
        assert "It renews on" in shown.text and "subx:cancel" in buttons(shown)
        await press(telegram, BOB, shown, "subx:cancel", "Renewal is off")
        assert telegram.payments.subscriptions[subscription].canceled_by_bot
        with pytest.raises(ValueError, match="does not renew"):
            telegram.payments.renew(subscription)
    finally:
        await running.stop()

    running = await started(settings, telegram)  # the state is in the database, not in the process
    try:
        shown = await subscription_reply(telegram, BOB, "Renewal is off")
        assert "subx:resume" in buttons(shown)
        await press(telegram, BOB, shown, "subx:resume", "It renews on")
        assert not telegram.payments.subscriptions[subscription].canceled_by_bot
        telegram.payments.renew(subscription)
        await telegram.wait_for(lambda: sum("Your plan renewed" in t for t in texts(telegram, bob.id)) == 2)
    finally:
        await running.stop()
    assert await plan_credits(running.settings, BOB.id) == (300, 0)
    assert await books(running.settings) == []
    assert await audit_command(running.settings) == (0, "ledger OK")


async def test_a_renewal_while_the_bot_was_down_is_reconciled_once_and_a_refunded_renewal_takes_its_credits(
        settings, telegram):
    carol, admin = private_chat(CAROL), private_chat(ALICE)
    running = await started(settings, telegram)
    try:
        telegram.user_sends(admin, ALICE, text="/start")
        subscription = await subscribe(telegram, CAROL)
        await telegram.wait_for(lambda: len(texts(telegram, carol.id)) >= 3)
    finally:
        await running.stop()
    lost = telegram.payments.renew(subscription, receipt_delivered=False)  # its update never reaches the bot
    for _ in range(2):  # the next start finds it; the one after has nothing more to do
        listed = star_listings(telegram)
        running = await started(settings, telegram)
        try:
            await telegram.wait_for(lambda: star_listings(telegram) > listed)
        finally:
            await running.stop()
        assert await plan_credits(running.settings, CAROL.id) == (300, 0)
        told = [t for t in texts(telegram, carol.id) if "нашёл" in t or "had not reached me" in t]
        assert len(told) == 1, texts(telegram, carol.id)
    running = await started(settings, telegram)
    try:
        shown = await subscription_reply(telegram, CAROL, "300")  # the period moved on with the renewal
        expires = telegram.payments.subscriptions[subscription].expires_at
        assert str(datetime.fromtimestamp(expires, UTC).year) in shown.text
        telegram.user_sends(admin, ALICE, text=f"/refund {subscription}")  # the first month ended: nothing to take
        await wait_text(telegram, admin.id, "already spent")
        telegram.user_sends(admin, ALICE, text=f"/refund {lost}")
        await wait_text(telegram, admin.id, "300 credits were taken back")
    finally:
        await running.stop()
    assert telegram.payments.charges[lost].refunded_at is not None
    assert telegram.payments.charges[subscription].refunded_at is None
    assert await plan_credits(running.settings, CAROL.id) == (0, 0)
    assert await books(running.settings) == []
    assert await audit_command(running.settings) == (0, "ledger OK")


def star_listings(telegram: FakeTelegram) -> int:
    return sum(1 for call in telegram.calls if call.method == "getStarTransactions" and call.status == 200)


async def audit_command(settings: Settings) -> tuple[int, str]:
    """`python -m bot audit` on the bot's database: its exit status and its last line."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", "audit", env=process_env({"DATABASE_URL": settings.database_url}),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await process.communicate()
    return process.returncode, output.decode().strip().splitlines()[-1]


async def test_a_plan_receipt_credits_no_more_than_the_stars_it_paid(settings, telegram, caplog):
    """Hostile review: a plan's credits came from its receipt's payload alone, whatever the amount or currency paid
    (a pack's receipt was already read by its Stars); a receipt of 1 Star for "subscription:300:250" gave 300."""
    caplog.set_level(logging.INFO)
    bob = private_chat(BOB)
    running = await started(settings, telegram)
    try:
        expires = int(time.time()) + 2592000
        for number, (currency, amount) in enumerate((("USD", 250), ("XTR", 1))):
            receipt = {"currency": currency, "total_amount": amount, "invoice_payload": f"subscription:{PLAN}",
                       "telegram_payment_charge_id": f"stxForged{number}", "provider_payment_charge_id": "",
                       "subscription_expiration_date": expires + number, "is_recurring": True,
                       "is_first_recurring": True}
            message = telegram._state.add_message(bob, BOB, "successful_payment",
                                                  extra={"successful_payment": receipt})
            telegram._state.push_update("message", message.to_dict())
            await telegram.wait_for(lambda number=number: f"stxForged{number}" in caplog.text)
        assert await plan_credits(running.settings, BOB.id) == (1, 0)  # 300 credits for 250 Stars: 1 for 1
    finally:
        await running.stop()


async def test_someone_else_pressing_a_plans_cancel_button_changes_nothing(settings, telegram):
    """Hostile review: in a group, another member's press of "Cancel renewal" under a subscriber's /subscription
    acted on the presser's own plan and turned the subscriber's message into the presser's plan (or "no plan")."""
    club = group(-100700, "Club")
    running = await started(settings, telegram)
    try:
        await subscribe(telegram, BOB)
        await wait_text(telegram, BOB.id, "Welcome to the plan")
        telegram.bot_added(club, BOB)
        before = len(telegram.sent(club.id))
        telegram.user_sends(club, BOB, text="/subscription")
        await telegram.wait_for(lambda: any("It renews on" in (m.text or "") for m in telegram.sent(club.id)[before:]))
        shown = next(m for m in telegram.sent(club.id)[before:] if "It renews on" in (m.text or ""))
        for data in ("subx:cancel", "subx:cancel"):  # pressed again and again
            query = telegram.user_presses(club, CAROL, shown.message_id, data)
            await telegram.wait_for(lambda query=query: query in telegram.callback_answers)
            assert telegram.callback_answers[query].get("show_alert")
        assert (telegram.message(club.id, shown.message_id) or {}).get("text") == shown.text
        assert not telegram.payments.subscription_of(BOB).canceled_by_bot
        # the subscriber's own press still works
        telegram.user_presses(club, BOB, shown.message_id, "subx:cancel")
        await telegram.wait_for(lambda: "Renewal is off" in ((telegram.message(club.id, shown.message_id) or {})
                                                             .get("text") or ""))
        assert telegram.payments.subscription_of(BOB).canceled_by_bot
    finally:
        await running.stop()
