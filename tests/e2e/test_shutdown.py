"""SIGTERM to a real `python -m bot`: no new updates, in-flight calls finish, leases released, exit 0; a restart resumes."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.runtime import SHUTDOWN_GRACE_S
from bot.sandbox import Sandbox, SandboxConfig
from tests.e2e.conftest import SERVICE_KEY
from tests.e2e.helpers import media, texts
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, TgFaults, User, private_chat
from tests.harness import BotProcess, bot_settings, sqlite_url

SEND_STALL_S = 3.0
pytestmark = pytest.mark.timeout(90)


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    service = Sandbox(SandboxConfig(api_key=SERVICE_KEY, task_seconds=1.0))
    await service.start()
    yield service
    await service.stop()


@pytest.fixture
async def telegram() -> AsyncIterator[FakeTelegram]:
    # every result upload takes a while: SIGTERM lands while one is on the wire
    fake = FakeTelegram(faults=TgFaults(rate=1.0, kinds=("timeout",), timeout_seconds=SEND_STALL_S,
                                        methods=frozenset({"sendPhoto"})))
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
async def bot_process(tmp_path: Path, telegram: FakeTelegram, sandbox: Sandbox) -> AsyncIterator[BotProcess]:
    process = BotProcess(bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), log_level="INFO"),
                         tmp_path, telegram)
    yield process
    await process.close()


def stored_jobs(database: Path) -> list[tuple[int, str, str | None]]:
    """(id, state, lease owner) of every job."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        return connection.execute("SELECT id, state, lease_owner FROM jobs ORDER BY id").fetchall()


async def test_sigterm_finishes_in_flight_work_releases_leases_and_a_restart_resumes(
        bot_process: BotProcess, telegram: FakeTelegram, tmp_path: Path):
    users = [User(8100 + number, f"Term{number}") for number in range(4)]
    requests = [telegram.user_sends(private_chat(user), user, photo=samples.jpeg(200 + number, 150),
                                    caption="/upscale 2") for number, user in enumerate(users)]
    await bot_process.start()

    def sending() -> list:
        return [call for call in telegram.calls if call.method == "sendPhoto" and call.status is None]

    await telegram.wait_for(lambda: bool(sending()), timeout=30)
    in_flight = sending()[0]
    stopped_at = time.monotonic()
    exit_code = await bot_process.terminate(timeout=SHUTDOWN_GRACE_S + 15)
    took = time.monotonic() - stopped_at
    late_user = User(8199, "Late")
    late = telegram.user_sends(private_chat(late_user), late_user, text="/help")

    assert exit_code == 0, bot_process.log_path.read_text()
    assert took < SHUTDOWN_GRACE_S + 10
    # the upload on the wire when SIGTERM came was allowed to finish, and its job recorded as delivered
    assert in_flight.status == 200
    assert took >= SEND_STALL_S - 1.0
    jobs = stored_jobs(tmp_path / "bot.db")
    assert any(state == "delivered" for _, state, _ in jobs)
    assert all(owner is None for _, _, owner in jobs), jobs  # every lease given back
    # no update was taken after the signal: the late message waits with Telegram, unanswered
    assert telegram.pending_updates == 1
    assert telegram.sent(late_user.id) == []

    telegram.faults = None
    await bot_process.start()
    for request in requests:
        chat_id = request["chat"]["id"]
        await telegram.wait_for(lambda chat_id=chat_id: bool(media(telegram, chat_id)), timeout=30)
    await telegram.wait_for(lambda: bool(texts(telegram, late_user.id)), timeout=15)
    assert await bot_process.terminate() == 0
    assert [len(media(telegram, request["chat"]["id"])) for request in requests] == [1] * len(requests)
    assert {state for _, state, _ in stored_jobs(tmp_path / "bot.db")} == {"delivered"}
    assert late["message_id"] in {m.reply_to_message_id for m in telegram.sent(late_user.id)}
