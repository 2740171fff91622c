"""The whole bot's daily budget of free credits (FREE_CREDITS_DAILY_BUDGET): many strangers at once reach it and
never pass it by one credit, on SQLite and PostgreSQL and with three replicas behind a balancer; the refused are
told the free credits are gone for today and pointed at /buy, and the admins hear of it once."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.store import create_engine
from tests.conftest import _empty_postgres_database
from tests.e2e.conftest import ALICE, RunningBot
from tests.e2e.helpers import media, texts, wait_text
from tests.e2e.test_credits import books
from tests.e2e.test_replicas import RoundRobin
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User, private_chat
from tests.harness import WEBHOOK_PATH, BotProcess, bot_settings, fakes, free_port, settings_of, sqlite_url

GONE = "free credits for everyone are all given out"
ALERT = "Today's free credits are all given out"


def strangers(count: int, first: int = 5000) -> list[User]:
    return [User(first + number, f"Stranger{number}") for number in range(count)]


def answered(telegram: FakeTelegram, person: User) -> int:
    """How many of a person's requests were answered: by a refusal, or by a result."""
    return sum(GONE in t for t in texts(telegram, person.id)) + len(media(telegram, person.id))


async def given_today(url: str) -> tuple[int, int, int]:
    """(free credits the allowances gave, the budget accounts' balances, their rows' sum), from the database."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            allowances = (await connection.execute(text(
                "SELECT coalesce(sum(amount), 0) FROM credit_ledger WHERE reason = 'allowance'"))).scalar_one()
            balance = (await connection.execute(text(
                "SELECT coalesce(sum(balance), 0) FROM credit_accounts WHERE kind = 'budget'"))).scalar_one()
            rows = (await connection.execute(text(
                "SELECT coalesce(sum(amount), 0) FROM credit_ledger WHERE kind = 'budget'"))).scalar_one()
    finally:
        await engine.dispose()
    return int(allowances), int(balance), int(rows)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "bot.db")
    url = request.getfixturevalue("postgres_database")
    await _empty_postgres_database(url)
    return url


async def test_many_strangers_at_once_reach_the_budget_and_never_pass_it(database, telegram, sandbox, caplog):
    caplog.set_level(logging.WARNING, logger="bot.tg.budget")
    values = bot_settings(telegram, sandbox, database, free_credits_per_day=3, free_credits_daily_budget=10,
                          bot_admins=str(ALICE.id), credit_packs="10:50", credit_subscription="300:250")
    running = RunningBot(settings_of(values).model_copy(update={"telegram_rate_limit": False}), telegram)
    await running.start()
    people = strangers(12)
    try:
        telegram.user_sends(private_chat(ALICE), ALICE, text="/start")  # a bot may write only to who started it
        await wait_text(telegram, ALICE.id, "")
        for number, person in enumerate(people):  # all at once: the bot handles updates concurrently
            telegram.user_sends(private_chat(person), person, photo=samples.jpeg(160, 100 + number),
                                caption="/upscale 2")
        await telegram.wait_for(lambda: all(answered(telegram, person) for person in people), 30)
        refused = [person for person in people if any(GONE in t for t in texts(telegram, person.id))]
        # 3 + 3 + 3 + 1: four strangers got free credits, the budget's last one to the fourth; eight none
        assert await given_today(database) == (10, 10, 10)
        await wait_text(telegram, ALICE.id, ALERT)
        await asyncio.sleep(0.5)
    finally:
        await running.stop()
    assert len(refused) == 8
    assert all("/buy" in next(t for t in texts(telegram, person.id) if GONE in t) for person in refused)
    assert sum(ALERT in t for t in texts(telegram, ALICE.id)) == 1
    assert await books(running.settings) == []


async def test_without_an_allowlist_the_summary_shows_the_default_budget_and_its_worst_cost(
        tmp_path, telegram, sandbox, caplog):
    caplog.set_level(logging.INFO, logger="bot.runtime")
    values = bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), free_credits_per_day=5)
    del values["FREE_CREDITS_DAILY_BUDGET"]  # the operator's default
    running = RunningBot(settings_of(values), telegram)
    await running.start()
    await running.stop()
    [summary] = [r.getMessage() for r in caplog.records if "is running" in r.getMessage()]
    assert "all together at most 200 free credits a day (FREE_CREDITS_DAILY_BUDGET), " \
           "at worst 200 service tokens a day" in summary


@pytest.mark.postgres
@pytest.mark.timeout(240)
async def test_three_replicas_never_give_one_free_credit_past_the_budget(tmp_path: Path, postgres_database: str):
    await _empty_postgres_database(postgres_database)
    budget, people = 25, strangers(40, first=7000)
    async with fakes(task_seconds=0.2) as world:
        telegram = world.telegram
        ports = [free_port() for _ in range(3)]
        balancer = RoundRobin([f"http://127.0.0.1:{port}" for port in ports])
        await balancer.start(free_port())
        bots = []
        for number, port in enumerate(ports):
            values = bot_settings(telegram, world.sandbox, postgres_database, webhook=True, http_port=port,
                                  worker_id=f"budget-{number}", free_credits_per_day=3,
                                  free_credits_daily_budget=budget, bot_admins=str(ALICE.id), credit_packs="10:50")
            values["TELEGRAM_WEBHOOK_URL"] = balancer.url + WEBHOOK_PATH
            bots.append(BotProcess(values, tmp_path / f"b{number}", telegram))
        try:
            for bot in bots:
                await bot.start()
            telegram.user_sends(private_chat(ALICE), ALICE, text="/start")
            await telegram.wait_for(lambda: bool(texts(telegram, ALICE.id)), 20)
            for round_ in range(2):  # each stranger twice, all at once: every replica tops allowances up together
                for number, person in enumerate(people):
                    telegram.user_sends(private_chat(person), person, photo=samples.jpeg(160, 100 + number),
                                        caption=f"/upscale {2 + round_ * 2}")
            await telegram.wait_for(lambda: all(answered(telegram, person) >= 2 for person in people), 120)
            assert await given_today(postgres_database) == (budget, budget, budget)
            await telegram.wait_for(lambda: any(ALERT in t for t in texts(telegram, ALICE.id)), 20)
            await asyncio.sleep(1.0)
        finally:
            await asyncio.gather(*(bot.close() for bot in bots))
            await balancer.stop()
    assert all(count > 0 for count in balancer.served.values()), balancer.served  # every replica took updates
    assert sum(ALERT in t for t in texts(telegram, ALICE.id)) == 1
    assert any(GONE in t for person in people for t in texts(telegram, person.id))
    assert await books(settings_of(values)) == []
