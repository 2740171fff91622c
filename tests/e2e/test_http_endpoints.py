"""The bot's HTTP server: /healthz, /readyz, /metrics, and the service's callbacks (forged ones change nothing)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families
from telegram import Bot

from bot.aiart.errors import AiartError
from bot.http.server import Readiness, Routes, build_app
from bot.metrics import _POLL_BUCKETS, _TIME_BUCKETS, Metrics
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.sandbox import Sandbox
from bot.store import ACTIVE_STATES, JobState, create_engine
from bot.store.inbox import DROPPED, NOTICE, PENDING
from bot.tg.request import DOWNLOAD_LABEL, OTHER_LABEL
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import media, wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, private_chat
from tests.harness import InProcessBot, bot_settings, free_port, http_url, settings_of, sqlite_url

CALLBACK_PATH = "/aiart/callback-secret-path"


@pytest.fixture
def values(tmp_path: Path, telegram: FakeTelegram, sandbox: Sandbox) -> dict[str, str]:
    return bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), http_port=free_port(),
                        aiart_webhook_path=CALLBACK_PATH, worker_id="http-worker")


@pytest.fixture
async def running(values: dict[str, str], telegram: FakeTelegram) -> AsyncIterator[InProcessBot]:
    bot = InProcessBot(settings_of(values), telegram)
    await bot.start()
    yield bot
    await bot.stop()


async def get(url: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        return response.status, await response.text()


async def post_json(url: str, body: object) -> int:
    async with aiohttp.ClientSession() as session, session.post(url, json=body) as response:
        return response.status


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample in Prometheus' text format (0 when absent)."""
    wanted = ",".join(f'{key}="{value}"' for key, value in sorted(labels.items()))
    for line in text.splitlines():
        match = re.fullmatch(rf"{re.escape(name)}(?:\{{(.*)\}})? (\S+)", line)
        if match and ",".join(sorted((match.group(1) or "").split(","))) == wanted:
            return float(match.group(2))
    return 0.0


async def test_healthz_and_readyz_answer_while_the_bot_runs(running, values):
    assert (await get(http_url(values) + "/healthz"))[0] == 200
    status, body = await get(http_url(values) + "/readyz")
    assert status == 200, body


async def test_readyz_fails_when_the_database_is_unreachable(unused_tcp_port_factory=None):
    port = free_port()  # nothing listens there
    engine = create_engine(f"postgresql+asyncpg://bot:bot@127.0.0.1:{port}/bot")

    async def ping() -> None:
        async with engine.connect() as connection:
            await connection.exec_driver_sql("SELECT 1")

    server_port = free_port()
    runner = aiohttp.web.AppRunner(build_app(Readiness(check_database=ping), Metrics(), Routes()))
    await runner.setup()
    await aiohttp.web.TCPSite(runner, "127.0.0.1", server_port).start()
    try:
        status, body = await get(f"http://127.0.0.1:{server_port}/readyz")
        assert status == 503 and "database" in body
        assert (await get(f"http://127.0.0.1:{server_port}/healthz"))[0] == 200  # alive all the same
    finally:
        await runner.cleanup()
        await engine.dispose()


async def test_metrics_count_jobs_polls_and_telegram_calls(running, telegram, values, sandbox):
    chat = private_chat(ALICE)
    before = (await get(http_url(values) + "/metrics"))[1]
    for height in (120, 121, 122):
        telegram.user_sends(chat, ALICE, photo=samples.jpeg(160, height), caption="/upscale 2")
    await wait_media(telegram, chat.id, count=3)

    async def scraped_after_delivery() -> str:
        # the DELIVERED write commits a moment after Telegram accepted the photo (writes are batched)
        while True:
            status, text = await get(http_url(values) + "/metrics")
            assert status == 200
            if sample(text, "bot_jobs_finished_total", operation="upscale", state="delivered") - sample(
                    before, "bot_jobs_finished_total", operation="upscale", state="delivered") >= 3:
                return text
            await asyncio.sleep(0.05)

    after = await asyncio.wait_for(scraped_after_delivery(), 10)

    def moved(name: str, **labels: str) -> float:
        return sample(after, name, **labels) - sample(before, name, **labels)

    assert moved("bot_jobs_created_total", operation="upscale") == 3
    assert moved("bot_jobs_finished_total", operation="upscale", state="delivered") == 3
    assert moved("bot_job_queue_seconds_count", operation="upscale") == 3
    assert moved("bot_job_deliver_seconds_count", operation="upscale") == 3
    polls = [r for r in sandbox.received if r.method == "GET" and "/v1/aiart/tasks/" in r.path]
    assert moved("bot_service_calls_total", call="poll", outcome="ok") == len(polls)
    assert moved("bot_service_calls_total", call="submit", outcome="ok") == 3
    assert moved("bot_polls_per_task_count") == 3
    assert moved("bot_polls_per_task_sum") == len(polls)
    photos = [call for call in telegram.calls if call.method == "sendPhoto"]
    assert moved("bot_telegram_calls_total", method="sendPhoto") == len(photos) == 3
    # the waiting jobs are counted at most every few seconds (bot.http.probes): a scrape may show an older count

    for _ in range(100):
        if sample((await get(http_url(values) + "/metrics"))[1], "bot_jobs_waiting", state="queued") == 0:
            break
        await asyncio.sleep(0.1)
    else:
        raise AssertionError("the waiting jobs' count never came down to 0")


@pytest.mark.parametrize("task_seconds", [1.5])
async def test_a_forged_callback_changes_nothing_but_timing(running, telegram, values, sandbox):
    url = http_url(values) + CALLBACK_PATH
    # unknown task: answered like any other, and nothing happens
    assert await post_json(url, {"taskId": "no-such-task", "status": 1, "resultUrl": "http://evil.example/x.png"}) == 200
    assert await post_json(url, {"nothing": "here"}) == 400
    chat = private_chat(ALICE)
    request = telegram.user_sends(chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
    await telegram.wait_for(lambda: any(task.status == 0 for task in sandbox.tasks.values()), 10)
    [task_id] = list(sandbox.tasks)
    # the task is still running: a forged "done" only brings a status check forward, which finds it running
    for _ in range(3):
        assert await post_json(url, {"taskId": task_id, "status": 1, "resultUrl": "http://evil.example/x.png"}) == 200
    [result] = await wait_media(telegram, chat.id)
    assert result.reply_to_message_id == request["message_id"]
    await asyncio.sleep(0.5)
    assert len(media(telegram, chat.id)) == 1
    # the result came from the service, not from the callback's URL
    downloads = [r for r in sandbox.received if r.method == "GET" and "/files/" in r.path]
    assert downloads or sandbox.tasks[task_id].result_urls


async def test_a_callback_from_outside_the_allowlist_is_refused(tmp_path, telegram, sandbox):
    # TRUSTED_PROXIES names a proxy network this test's client is not in (it connects from loopback)
    values = bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), http_port=free_port(),
                          aiart_webhook_path=CALLBACK_PATH, aiart_webhook_ips="54.212.95.175,44.236.127.35",
                          trusted_proxies="10.0.0.0/8, 192.168.7.2")
    bot = InProcessBot(settings_of(values), telegram)
    await bot.start()
    try:
        assert await post_json(http_url(values) + CALLBACK_PATH, {"taskId": "x", "status": 1}) == 403
        # a direct client naming an allowed address in X-Forwarded-For is judged by its own address
        async with aiohttp.ClientSession() as session, session.post(
                http_url(values) + CALLBACK_PATH, json={"taskId": "x", "status": 1},
                headers={"X-Forwarded-For": "54.212.95.175"}) as response:
            assert response.status == 403
    finally:
        await bot.stop()


def known_label_values() -> dict[tuple[str, str], set[str]]:
    """(metric, label) -> every value the bot may give that label: fixed, small sets."""
    bot_methods = {name for name in dir(Bot) if name[:1].islower() and "_" not in name
                   and callable(getattr(Bot, name))} | {DOWNLOAD_LABEL, OTHER_LABEL}
    operations = set(build_catalogue(load_catalogue(None)))
    states = {state.value for state in JobState}
    errors, kinds = set(), [AiartError]
    while kinds:
        kind = kinds.pop()
        errors.add(kind.__name__)
        kinds += kind.__subclasses__()
    buckets = {str(float(bound)) for bound in (*_TIME_BUCKETS, *_POLL_BUCKETS)} | {"+Inf"}
    timed = {"operation": operations, "le": buckets}
    return {
        ("bot_jobs_created", "operation"): operations,
        ("bot_jobs_finished", "operation"): operations, ("bot_jobs_finished", "state"): states,
        **{(name, label): values for name in ("bot_job_queue_seconds", "bot_job_service_seconds",
                                              "bot_job_deliver_seconds") for label, values in timed.items()},
        ("bot_service_calls", "call"): {"submit", "poll"},
        ("bot_service_calls", "outcome"): {"ok", "other"} | errors,
        ("bot_polls_per_task", "le"): buckets,
        ("bot_service_callbacks", "outcome"): {"refused", "malformed", "poll_now", "ignored"},
        ("bot_telegram_calls", "method"): bot_methods, ("bot_telegram_429", "method"): bot_methods,
        ("bot_updates", "source"): {"webhook"},
        ("bot_updates", "outcome"): {PENDING, DROPPED, NOTICE, "duplicate"},
        ("bot_jobs_waiting", "state"): {state.value for state in ACTIVE_STATES},
    }


async def test_every_metric_label_takes_values_from_a_fixed_small_set(running, telegram, values):
    chat = private_chat(ALICE)
    telegram.user_sends(chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
    telegram.user_sends(chat, ALICE, document=(samples.png(90, 60), "cat.png", "image/png"), caption="/removebg")
    telegram.user_sends(chat, ALICE, text="/upscale 7")  # refused: no picture, a bad argument
    await wait_media(telegram, chat.id, count=2)
    url = http_url(values)
    assert await post_json(url + CALLBACK_PATH, {"taskId": "no-such-task"}) == 200
    assert await post_json(url + CALLBACK_PATH, {"nothing": "here"}) == 400
    status, text = await get(url + "/metrics")
    assert status == 200
    known = known_label_values()
    seen: dict[tuple[str, str], set[str]] = {}
    for family in text_string_to_metric_families(text):  # a counter's _created comes as a family of its own
        for metric_sample in family.samples:
            for label, value in metric_sample.labels.items():
                metric = re.sub(r"_(total|created|bucket|count|sum)$", "", metric_sample.name)
                seen.setdefault((metric, label), set()).add(value)
    unknown = {key: values - known.get(key, set()) for key, values in seen.items() if values - known.get(key, set())}
    assert not unknown, f"label values outside their fixed sets: {unknown}"
    # the run took the paths whose labels were unbounded before: a file download, and service calls
    assert DOWNLOAD_LABEL in seen[("bot_telegram_calls", "method")]
    assert {"submit", "poll"} <= seen[("bot_service_calls", "call")]
