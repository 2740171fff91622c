"""A first run that explains itself: each start-up problem is one line naming what to change, a non-zero
exit, no traceback and nothing left open; a good start prints a short summary.

The problems run as `python -m bot` subprocesses, all at once (each is a second of interpreter start-up).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from dataclasses import dataclass

import pytest

from tests.e2e.conftest import SERVICE_KEY
from tests.fakes.telegram import FakeTelegram
from tests.harness import ROOT, bot_settings, free_port, process_env, settings_of, sqlite_url


@dataclass
class Outcome:
    """How one `python -m bot` run ended."""

    returncode: int
    output: str

    @property
    def lines(self) -> list[str]:
        return self.output.strip().splitlines()


async def run_bot(values: dict[str, str], workdir) -> Outcome:
    """`python -m bot` with exactly these settings, in a directory of its own; its exit code and output."""
    workdir.mkdir(parents=True, exist_ok=True)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", cwd=workdir, env=process_env(values),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    output, _ = await asyncio.wait_for(process.communicate(), 60)
    return Outcome(process.returncode or 0, output.decode(errors="replace"))


def closed_port() -> int:
    """A loopback port nothing listens on: connecting to it is refused at once."""
    return free_port()


async def test_each_start_up_problem_is_one_line_naming_the_setting_and_a_non_zero_exit_unless_debugging(tmp_path, telegram, sandbox):
    good = bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        cases = {
            "rejected token": ({**good, "TELEGRAM_BOT_TOKEN": "42:not-the-token-telegram-knows"},
                               "Telegram rejected TELEGRAM_BOT_TOKEN"),
            "unreachable Bot API": ({**good, "TELEGRAM_API_URL": f"http://127.0.0.1:{closed_port()}"},
                                    "cannot reach the Bot API"),
            "unreachable database": ({**good, "DATABASE_URL": f"postgresql://bot:pw-secret@127.0.0.1:{closed_port()}/bot"},
                                     "DATABASE_URL"),
            "port in use": ({**good, "HTTP_PORT": str(port)}, "set HTTP_PORT"),
            "invalid setting": ({**good, "TELEGRAM_WEBHOOK_SECRET": "has spaces!"}, "TELEGRAM_WEBHOOK_SECRET"),
            "contradictory settings": ({**good, "IMAGE_HANDOFF": "signed_url"}, "needs PUBLIC_URL"),
            "refused service key": ({**good, "AIART_API_KEY": "not-the-service-key"}, "refused AIART_API_KEY"),
            "webhook Telegram refuses": ({**good, "TELEGRAM_WEBHOOK_URL": "https://bot.example.com:8080/telegram"},
                                         "Telegram refused TELEGRAM_WEBHOOK_URL"),
            "no token": ({name: value for name, value in good.items() if name != "TELEGRAM_BOT_TOKEN"},
                         "TELEGRAM_BOT_TOKEN is not set"),
        }
        # with LOG_LEVEL=DEBUG the same problem keeps its traceback (run alongside, to share the wait)
        debug = {**cases["unreachable Bot API"][0], "LOG_LEVEL": "DEBUG"}
        *outcomes, debugged = await asyncio.gather(*(run_bot(values, tmp_path / str(index))
                                                     for index, (values, _) in enumerate(cases.values())),
                                                   run_bot(debug, tmp_path / "debug"))
    assert debugged.returncode != 0 and "Traceback" in debugged.output, debugged.output
    assert "cannot reach the Bot API" in debugged.output and "Exception ignored" not in debugged.output
    for (case, (_, expected)), outcome in zip(cases.items(), outcomes, strict=True):
        assert outcome.returncode != 0, f"{case}: exit 0\n{outcome.output}"
        assert len(outcome.lines) == 1, f"{case}: {len(outcome.lines)} lines\n{outcome.output}"
        assert expected in outcome.lines[0], f"{case}: {outcome.output}"
        assert "Traceback" not in outcome.output and "Exception ignored" not in outcome.output, case
        assert "pw-secret" not in outcome.output and telegram.token.split(":")[1] not in outcome.output, case


@pytest.fixture
def caplog_info(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="bot.runtime")
    return caplog


async def test_a_good_start_summarises_mode_store_service_users_and_the_cost_of_free_credits(
        caplog_info, tmp_path, telegram: FakeTelegram, sandbox):
    from tests.harness import InProcessBot

    values = bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), free_credits_per_day=4,
                          bot_allowed_users="7,8", bot_admins="9")
    running = InProcessBot(settings_of(values), telegram)
    await running.start()
    await running.stop()
    [summary] = [r.getMessage() for r in caplog_info.records if "is running" in r.getMessage()]
    assert "long polling" in summary
    assert f"sqlite {sqlite_url(tmp_path / 'bot.db')}" in summary
    assert sandbox.base_url in summary and "1000 tokens left" in summary  # the service and its balance
    assert "2 listed users" in summary and "1 admin" in summary
    assert "at most 12 service tokens a day for the 3 allowed people" in summary
    # the allowlist is set: no warning that anyone may spend the operator's credits
    assert not [r for r in caplog_info.records if "anyone who finds" in r.getMessage()]


async def test_a_real_key_without_an_allowlist_warns_that_anyone_may_spend_the_operators_credits(
        caplog_info, tmp_path, telegram: FakeTelegram, sandbox):
    from tests.harness import InProcessBot

    running = InProcessBot(settings_of(bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"))), telegram)
    await running.start()
    await running.stop()
    [warning] = [r.getMessage() for r in caplog_info.records if r.levelno == logging.WARNING]
    assert "anyone who finds" in warning and "BOT_ALLOWED_USERS" in warning and "FREE_CREDITS_PER_DAY" in warning
    [summary] = [r.getMessage() for r in caplog_info.records if "is running" in r.getMessage()]
    assert "anyone who finds the bot" in summary and "the number of people is not bounded" in summary
    assert SERVICE_KEY not in caplog_info.text


def test_the_http_server_listens_on_loopback_unless_telegram_or_the_service_must_reach_it():
    from bot.config import Settings

    assert Settings(_env_file=None).listen_host == "127.0.0.1"
    assert Settings(_env_file=None, telegram_webhook_url="https://bot.example.com/tg").listen_host == "0.0.0.0"
    assert Settings(_env_file=None, public_url="https://bot.example.com").listen_host == "0.0.0.0"
    assert Settings(_env_file=None, http_host="10.0.0.5").listen_host == "10.0.0.5"
    assert ROOT.joinpath("Dockerfile").read_text().count("HTTP_HOST=0.0.0.0") == 1  # the container sets it
