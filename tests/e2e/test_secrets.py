"""Secrets: the bot token never reaches the service, and neither it nor the API key shows up in logs,
in what users are told, or in the database; signed media links work, then expire.

Every operation runs end to end; a second run with faults from both sides searches the error paths
(retries, tracebacks, failure messages) too; and the real process is checked at DEBUG and when
Telegram rejects its token.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import socket
from collections.abc import AsyncIterator, Iterator
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import MetaData, select

from bot.config import Settings
from bot.logs import NOISY_LOGGERS, redacting_handler
from bot.sandbox import FaultConfig, Sandbox
from bot.store import FINAL_STATES, create_engine
from tests.e2e.conftest import ALICE, SERVICE_KEY, RunningBot
from tests.e2e.helpers import media, wait_acknowledged, wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, TgFaults, User, private_chat
from tests.harness import BotProcess, bot_settings, sandbox_config

ONE_IMAGE_REQUESTS = ("/upscale 2", "/retouch", "/art oil a stormy sea", "/removebg", "/headshot business 2",
                      "/colorize", "/restore", "/expand 10 20 30 40")
#: each request comes from its own user and chat, so Telegram's per-chat pacing does not slow the run
USERS = [User(2000 + number, f"User {number}") for number in range(len(ONE_IMAGE_REQUESTS) + 3)]
#: results when nothing fails: ten single images and a headshot pair
RESULTS = 12
JOBS = 11


def results(telegram: FakeTelegram) -> int:
    return sum(len(media(telegram, user.id)) for user in USERS)


async def send_two_images(telegram: FakeTelegram, user: User, command: str, first: bytes, second: bytes) -> None:
    """A two-image request step by step, each step after the bot's prompt (album items handled out of
    order are another matter)."""
    chat = private_chat(user)
    requests = []
    for step, prompt in ((dict(text=command), "now."), (dict(photo=first), "Now send")):
        seen = len(telegram.sent(chat.id))
        requests.append(telegram.user_sends(chat, user, **step))
        await telegram.wait_for(lambda: any(m.text and prompt in m.text for m in telegram.sent(chat.id)[seen:]))
    telegram.user_sends(chat, user, photo=second)
    await wait_acknowledged(telegram, chat.id, requests[0]["message_id"])  # the job answers the command


async def send_every_operation(telegram: FakeTelegram) -> None:
    """One request of every operation."""
    for user, caption in zip(USERS, ONE_IMAGE_REQUESTS, strict=False):
        telegram.user_sends(private_chat(user), user, photo=samples.jpeg(320, 240), caption=caption)
    telegram.user_sends(private_chat(USERS[-3]), USERS[-3], text="/imagine none 1:1 a lighthouse at dawn")
    await asyncio.gather(
        send_two_images(telegram, USERS[-2], "/faceswap", samples.jpeg(200, 200), samples.jpeg(300, 200)),
        send_two_images(telegram, USERS[-1], "/replace a red ball", samples.jpeg(256, 256),
                        samples.png(256, 256, "L")))


def secret_needles(telegram: FakeTelegram) -> dict[str, bytes]:
    """Every form in which a secret, or a Telegram file URL, could show up."""
    token = telegram.token
    return {
        "bot token": token.encode(),
        "bot token, percent-encoded": quote(token, safe="").encode(),
        "bot token secret half": token.split(":", 1)[1].encode(),
        "API key": SERVICE_KEY.encode(),
        "Telegram file URL": b"/file/bot",
        "Telegram API host": b"api.telegram",
        "fake Bot API root": telegram.url.removeprefix("http://").encode(),
    }


def leaks(blob: bytes | str, needles: dict[str, bytes]) -> list[str]:
    data = blob.encode() if isinstance(blob, str) else blob
    return [name for name, needle in needles.items() if needle in data]


async def all_rows(database_url: str) -> list[tuple[str, tuple]]:
    """Every row of every table of the bot's database, every column."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            metadata = MetaData()
            await connection.run_sync(metadata.reflect)
            rows = []
            for table in metadata.sorted_tables:
                rows += [(table.name, tuple(row)) for row in await connection.execute(select(table))]
            return rows
    finally:
        await engine.dispose()


async def wait_all_final(database_url: str, count: int, timeout: float = 60) -> list[dict]:
    """Wait until `count` jobs exist and all are in a final state; returns them as column dicts."""
    engine = create_engine(database_url)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while True:
            async with engine.connect() as connection:
                metadata = MetaData()
                await connection.run_sync(metadata.reflect, only=["jobs"])
                jobs = [dict(row._mapping) for row in await connection.execute(select(metadata.tables["jobs"]))]
            if len(jobs) >= count and all(job["state"] in FINAL_STATES for job in jobs):
                return jobs
            if loop.time() > deadline:
                raise AssertionError(f"jobs not final in time: {[(j['operation'], j['state']) for j in jobs]}")
            await asyncio.sleep(0.1)
    finally:
        await engine.dispose()


class RawRecords(logging.Handler):
    """Keeps the full text of every record as it was logged, before any filter touched it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[tuple[str, int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a malformed record is still searched, as its parts
            text = f"{record.msg!r} {record.args!r}"
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        text += "\n" + (record.exc_text or "") + "\n" + (record.stack_info or "")
        self.records.append((record.name, record.levelno, text))


@pytest.fixture
def all_logs(telegram: FakeTelegram) -> Iterator[tuple[RawRecords, io.StringIO]]:
    """Every record of every logger at DEBUG: raw, and as setup_logging's redacting handler writes it."""
    root = logging.getLogger()
    loggers = [logger for logger in root.manager.loggerDict.values() if isinstance(logger, logging.Logger)]
    levels = {logger.name: logger.level for logger in loggers}
    old_root_level = root.level
    for logger in loggers:
        logger.setLevel(logging.NOTSET)  # each inherits DEBUG from the root
    raw, written = RawRecords(), io.StringIO()
    redacting = redacting_handler([telegram.token, SERVICE_KEY], written)
    # raw first: the redacting filter rewrites records in place
    root.handlers[:0] = [raw, redacting]
    root.setLevel(logging.DEBUG)
    yield raw, written
    root.removeHandler(raw)
    root.removeHandler(redacting)
    root.setLevel(old_root_level)
    for logger in loggers:
        logger.setLevel(levels[logger.name])


@pytest.fixture
async def sandbox(request: pytest.FixtureRequest, task_seconds: float) -> AsyncIterator[Sandbox]:
    """The conftest sandbox, with faults when a test parametrizes it indirectly."""
    faults = getattr(request, "param", None) or FaultConfig()
    async with Sandbox(sandbox_config(task_seconds=task_seconds, faults=faults)) as service:
        yield service


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"user_max_active_jobs": 100, "free_credits_per_day": 1000})


def check_nothing_leaked(telegram: FakeTelegram, sandbox: Sandbox, rows: list[tuple[str, tuple]],
                         written_logs: str) -> None:
    needles = secret_needles(telegram)
    # 1. everything the service received: method, path, query, every header, raw body
    for request in sandbox.received:
        headers = "\n".join(f"{name}: {value}" for name, value in request.headers.items())
        seen = f"{request.method} {request.path}?{request.query_string}\n{headers}\n".encode() + request.body
        found = leaks(seen, {k: v for k, v in needles.items() if k != "API key"})
        assert not found, f"{request.method} {request.path} carried {found}"
        if not request.path.startswith("/v1/"):
            # upload slots live on storage outside the API: the key must not travel there either
            assert leaks(seen, {"API key": needles["API key"]}) == [], f"API key sent to {request.path}"
    # 2. what users were told: every parameter of every call the bot made to Telegram
    for call in telegram.calls:
        said = repr(call.params).encode() + b"".join(
            data if isinstance(data, bytes) else repr(data).encode() for data in call.files.values())
        assert not leaks(said, {k: v for k, v in needles.items() if k != "fake Bot API root"}), call.summary()
    for answer in telegram.callback_answers.values():
        assert not leaks(repr(answer), needles)
    # 3. every column of every row in the database
    for table, row in rows:
        assert not leaks(repr(row), needles), f"{table} row {row!r}"
    # 4. the log lines as setup_logging's handler writes them (URLs may show, with the token blanked out)
    assert written_logs.strip(), "no log lines were captured"
    secrets = {name: needle for name, needle in needles.items() if "token" in name or "key" in name}
    assert not leaks(written_logs, secrets), leaks(written_logs, secrets)


async def test_every_operation_leaks_no_secret_to_the_service_users_rows_or_logs(
        settings, telegram, sandbox, all_logs):
    raw, written = all_logs
    running = RunningBot(settings, telegram)
    await running.start()
    try:
        await send_every_operation(telegram)
        await telegram.wait_for(lambda: results(telegram) >= RESULTS, 60)
        jobs = await wait_all_final(settings.database_url, JOBS)
        assert sorted(job["state"] for job in jobs) == ["delivered"] * JOBS
    finally:
        await running.stop()
    assert {r.path for r in sandbox.received if r.method == "PUT"}, "no upload was exercised"
    check_nothing_leaked(telegram, sandbox, await all_rows(settings.database_url), written.getvalue())
    # Without redaction, these loggers print the token: every one of them is among those setup_logging
    # quiets, and the redacting handler caught them all (checked above).
    needles = secret_needles(telegram)
    leaking = {name for name, _, text in raw.records if leaks(text, {"token": needles["bot token"]})}
    assert leaking, "no logger printed the token: this test no longer shows why the redaction is there"
    assert all(any(name == noisy or name.startswith(noisy + ".") for noisy in NOISY_LOGGERS) for name in leaking), \
        leaking
    assert not [name for name, _, text in raw.records if leaks(text, {"key": needles["API key"]})]


@pytest.mark.parametrize("sandbox", [FaultConfig(rate=0.3, kinds=("500", "429", "drop", "malformed"), seed=7,
                                                 fail_task_rate=0.3)], indirect=True)
async def test_faults_on_both_sides_leak_no_secret_either(settings, telegram, sandbox, all_logs):
    raw, written = all_logs
    telegram.faults = TgFaults(rate=0.3, kinds=("500", "drop"), seed=3,
                               methods=frozenset({"download", "getFile", "sendPhoto", "deleteMessage"}))
    running = RunningBot(settings, telegram)
    await running.start()
    try:
        # BASE64 and upload hand-offs, text only, an album result, and a task that fails by itself
        requests = ("/upscale 2", "/retouch", "/colorize", "/headshot business 2", "/removebg")
        for user, caption in zip(USERS, requests, strict=False):
            telegram.user_sends(private_chat(user), user, photo=samples.jpeg(320, 240), caption=caption)
        telegram.user_sends(private_chat(USERS[-1]), USERS[-1], text="/imagine none sandbox-fail a vase")
        jobs = await wait_all_final(settings.database_url, 6, timeout=90)
    finally:
        await running.stop()
    states = [job["state"] for job in jobs]
    assert "failed" in states and "delivered" in states  # the error paths were really taken
    assert sum(telegram.stats[f"fault_{kind}"] for kind in ("500", "drop")) > 0
    assert sum(sandbox.faults_injected.values()) > 0
    assert any(level >= logging.WARNING for _, level, _ in raw.records)
    check_nothing_leaked(telegram, sandbox, await all_rows(settings.database_url), written.getvalue())
    assert results(telegram) >= states.count("delivered")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def signed_settings(settings: Settings) -> Settings:
    port = free_port()
    return settings.model_copy(update={"public_url": f"http://127.0.0.1:{port}", "http_port": port,
                                       "image_handoff": "signed_url", "media_ttl_s": 3.0})


async def test_signed_links_hand_images_over_and_expire(signed_settings, telegram, sandbox, alice_chat):
    running = RunningBot(signed_settings, telegram)
    await running.start()
    try:
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(300, 400), caption="/retouch")
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(320, 240), caption="/upscale 2")
        await wait_media(telegram, alice_chat.id, 2)
        posts = [r for r in sandbox.received if r.method == "POST"]
        assert len(posts) == 2
        prefix = f"{signed_settings.public_url}/media/"
        links = [json.loads(r.body)["userImageUrl"] for r in posts]
        assert all(link.startswith(prefix) for link in links), links
        # forced signed links: no BASE64 and no service upload, even for upscale which takes BASE64
        assert not [r for r in sandbox.received if "upload" in r.path]
        async with httpx.AsyncClient() as http:
            tampered = links[0][:-8] + ("A" if links[0][-8] != "A" else "B") + links[0][-7:]
            assert (await http.get(tampered)).status_code == 404
            await asyncio.sleep(4.5)  # a link's expiry is a whole second, rounded up past its 3 s lifetime
            expired = [await http.get(link) for link in links]
        assert [response.status_code for response in expired] == [404, 404]
    finally:
        await running.stop()


async def test_the_real_process_logs_no_secret_even_at_debug(tmp_path, telegram, sandbox, alice_chat):
    bot = BotProcess(bot_settings(telegram, sandbox, log_level="DEBUG"), tmp_path, telegram)
    try:
        await bot.start(timeout=30)
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(210, 140), caption="/retouch")
        await wait_media(telegram, alice_chat.id, timeout=30)
    finally:
        await bot.close()
    log = bot.log_text()
    assert " DEBUG bot." in log  # it really logged at DEBUG
    assert "HTTP Request" not in log  # httpx kept quiet
    secrets = {name: needle for name, needle in secret_needles(telegram).items() if "token" in name or "key" in name}
    assert not leaks(log, secrets), log[-3000:]


async def test_a_rejected_token_is_not_printed_when_the_process_stops(tmp_path, telegram):
    wrong = "987654:AAE-wrong-token-the-server-rejects"
    bot = BotProcess(bot_settings(telegram, telegram_bot_token=wrong, log_level="DEBUG"), tmp_path, telegram)
    await bot.launch()
    try:
        exit_code = await bot.wait(60)
    finally:
        await bot.close()
    output = bot.log_text()
    assert exit_code != 0
    assert "was rejected by the server" in output  # python-telegram-bot's message, which names the token
    assert wrong not in output and wrong.split(":")[1] not in output, output[-3000:]
