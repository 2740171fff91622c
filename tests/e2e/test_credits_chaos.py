"""Purchases and paid jobs while the bot is SIGKILLed: every balance still equals the sum of its ledger rows,
every payment Telegram took is credited exactly once, and every job was charged or refunded as it ended."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from bot.credits import audit
from bot.store import ACTIVE_STATES, create_engine, session_factory
from bot.store.models import Job
from tests.e2e.helpers import settled
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import User, private_chat
from tests.harness import BotProcess, bot_settings, fakes, sqlite_url, wait_until

#: credits in the one pack the operator offers, and its price in Stars
PACK_CREDITS, PACK_STARS = 10, 50
USERS = [User(6000 + number, f"Buyer{number}") for number in range(6)]


async def ledger_state(database: str) -> tuple[list[str], dict[int, int]]:
    """The audit's findings, and each user's credits bought (purchase rows less payment refunds)."""
    engine = create_engine(database)
    try:
        async with session_factory(engine)() as session:
            problems = await audit(session)
            rows = (await session.execute(text(
                "SELECT owner_id, sum(amount) FROM credit_ledger WHERE reason = 'purchase' GROUP BY owner_id"))).all()
    finally:
        await engine.dispose()
    return problems, {int(owner): int(total) for owner, total in rows}


async def unfinished_jobs(database: str) -> int:
    """How many jobs have not ended yet (a job is charged or refunded as it ends)."""
    engine = create_engine(database)
    try:
        async with session_factory(engine)() as session:
            return await session.scalar(select(func.count()).select_from(Job).where(Job.state.in_(ACTIVE_STATES))) or 0
    finally:
        await engine.dispose()


async def invoice_for(telegram: FakeTelegram, bot: BotProcess, user: User) -> int:
    """The user asks for the pack's invoice (/buy, then its button); the invoice's message id."""
    chat = private_chat(user)
    telegram.user_sends(chat, user, text="/buy")
    await wait_until(lambda: any(m.reply_markup for m in telegram.sent(chat.id)), 20, "the pack menu", bot)
    menu = [m for m in telegram.sent(chat.id) if m.reply_markup][-1]
    before = len(telegram.payments.invoices)
    telegram.user_presses(chat, user, menu.message_id, f"buy:{PACK_CREDITS}:{PACK_STARS}")
    await wait_until(lambda: len(telegram.payments.invoices) > before, 20, "the invoice", bot)
    (_, invoice_id), _ = list(telegram.payments.invoices.items())[-1]
    return invoice_id


@pytest.mark.timeout(240)
async def test_kills_during_purchases_and_paid_jobs_leave_the_books_right(tmp_path: Path):
    rng = random.Random(3)
    database = sqlite_url(tmp_path / "bot.db")
    async with fakes(task_seconds=0.3) as world:
        telegram = world.telegram
        values = bot_settings(telegram, world.sandbox, database, credit_packs=f"{PACK_CREDITS}:{PACK_STARS}",
                              free_credits_per_day=0, user_max_active_jobs=100)
        bot = BotProcess(values, tmp_path / "run", telegram)
        try:
            await bot.start()
            invoices = {user.id: await invoice_for(telegram, bot, user) for user in USERS}
            for round_ in range(3):
                # everyone pays; the first buyers' credits pay for jobs while the bot is killed mid-flight
                for user in USERS:
                    telegram.payments.user_pays(private_chat(user), user, invoices[user.id])
                for user in rng.sample(USERS, 3):
                    telegram.user_sends(private_chat(user), user, photo=samples.jpeg(120, 90 + round_),
                                        caption="/upscale 2")
                await asyncio.sleep(rng.uniform(0.1, 0.6))
                await bot.kill()
                # Telegram sends some receipts again, as after a crash before their offset was confirmed
                for charge_id in rng.sample(sorted(telegram.payments.charges), min(2, len(telegram.payments.charges))):
                    telegram.payments.redeliver(charge_id)
                await bot.start()
            await wait_until(lambda: telegram.pending_updates == 0, 60, "every update taken", bot)
            assert await settled(lambda: unfinished_jobs(database), 0, timeout=60) == 0, bot.log_tail()
        finally:
            await bot.close()
    problems, bought = await ledger_state(database)
    assert problems == []
    paid = {user.id: PACK_CREDITS * sum(1 for charge in telegram.payments.charges.values() if charge.user.id == user.id)
            for user in USERS}
    # a payment Telegram took is credited once, however often its receipt came; none is credited without one
    assert bought == {user_id: credits for user_id, credits in paid.items() if credits}
    assert sum(paid.values()) > 0
