"""Every variable in docs/configuration.md, set to a valid value other than its default, starts the bot; where
its effect can be seen from outside (the service's requests, the HTTP server, a caption, the summary), it is.

Three in-process starts cover the table: polling against a service with a key, webhook mode, and the
embedded sandbox. LOG_LEVEL's effect is seen in tests/e2e/test_startup.py (a subprocess: only `python -m
bot` sets up logging).
"""

from __future__ import annotations

import json
import logging
import socket
from importlib import resources

import httpx
import pytest

from bot.config import Settings
from tests.e2e.conftest import ALICE, SERVICE_KEY
from tests.e2e.helpers import wait_media, wait_text
from tests.fakes import samples
from tests.harness import InProcessBot, bot_settings, free_port, settings_of, sqlite_url
from tests.unit.test_configuration_table import documented

#: the settings of each start; together they are every variable in the table
POLLING = ("TELEGRAM_BOT_TOKEN", "TELEGRAM_API_URL", "TELEGRAM_RATE_LIMIT", "AIART_API_KEY", "AIART_BASE_URL",
           "AIART_STATIC_URL", "AIART_RESULT_HOSTS", "AIART_WEBHOOK_PATH", "AIART_WEBHOOK_IPS",
           "AIART_WEBHOOK_TRUST_FORWARDED", "TRUSTED_PROXIES", "IMAGE_HANDOFF", "SERVICE_CONCURRENCY", "JOB_DEADLINE_S", "POLL_POLICY",
           "POLL_TIME_SCALE", "BOT_ADMINS", "BOT_ALLOWED_USERS", "BOT_ALLOWED_CHATS", "FREE_CREDITS_PER_DAY",
           "FREE_CREDITS_FOR_VIDEO", "CREDIT_PRICES_FILE", "CREDIT_PACKS", "CREDIT_SUBSCRIPTION", "FREE_CREDITS_DAILY_BUDGET",
           "USER_MAX_ACTIVE_JOBS", "DATABASE_URL", "WORKER_ID", "HTTP_HOST", "HTTP_PORT", "PUBLIC_URL", "MEDIA_SECRET", "MEDIA_TTL_S", "LOG_LEVEL", "RESULT_DOWNLOAD_CONCURRENCY",
           "IMAGE_PREPARE_CONCURRENCY", "IMAGE_PREPARE_MEGAPIXELS", "STYLES_FILE", "PREVIEWS_DIR")
WEBHOOK = ("TELEGRAM_WEBHOOK_URL", "TELEGRAM_WEBHOOK_SECRET", "UPDATE_LEASE_S")
EMBEDDED_SANDBOX = ("SANDBOX_TASK_SECONDS", "SANDBOX_CREDITS")

#: a loopback address other than the default one (Linux answers on all of 127.0.0.0/8)
OTHER_LOOPBACK = "127.0.0.2"
CALLBACK_PATH = "/aiart/callback-test"
WEBHOOK_SECRET = "operator_chosen-Secret_42"


def test_the_starts_below_cover_every_variable_in_the_table():
    covered = [*POLLING, *WEBHOOK, *EMBEDDED_SANDBOX]
    assert len(covered) == len(set(covered))
    assert set(covered) == documented()


def differs_from_default(values: dict[str, str]) -> None:
    """Each value given is valid and not what the setting would be without it."""
    chosen, default = settings_of(values), Settings(_env_file=None)
    for name in values:
        assert getattr(chosen, name.lower()) != getattr(default, name.lower()), name


@pytest.fixture
def caplog_info(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="bot.runtime")
    return caplog


def other_loopback_available() -> bool:
    with socket.socket() as probe:
        try:
            probe.bind((OTHER_LOOPBACK, 0))
        except OSError:
            return False
    return True


async def test_polling_with_every_setting_of_its_own_changed(tmp_path, telegram, sandbox, alice_chat, caplog_info):
    host = OTHER_LOOPBACK if other_loopback_available() else "localhost"
    port = free_port()
    (tmp_path / "prices.json").write_text(json.dumps({"default": 2, "video_seconds": {"default": 1}}))
    (tmp_path / "styles.json").write_text(resources.files("bot.operations").joinpath("styles.json").read_text())
    values = bot_settings(
        telegram, sandbox, sqlite_url(tmp_path / "chosen.db"),
        telegram_rate_limit="false", aiart_result_hosts="results.example.com",
        aiart_webhook_path=CALLBACK_PATH, aiart_webhook_ips="127.0.0.0/8", aiart_webhook_trust_forwarded="true",
        trusted_proxies="127.0.0.0/8",
        image_handoff="upload", service_concurrency=2, job_deadline_s=600, poll_policy="fixed:0.3",
        poll_time_scale=0.5, bot_admins="1003", bot_allowed_users=str(ALICE.id), bot_allowed_chats="-100777",
        free_credits_per_day=7, free_credits_for_video="true", credit_prices_file=tmp_path / "prices.json", credit_packs="10:50",
        credit_subscription="300:250", free_credits_daily_budget=30,
        user_max_active_jobs=2, worker_id="chosen-worker", http_host=host, http_port=port,
        public_url=f"http://{host}:{port}", media_secret="a-media-secret-of-32-characters!", media_ttl_s=120,
        log_level="WARNING", result_download_concurrency=2, image_prepare_concurrency=1,
        image_prepare_megapixels=20, styles_file=tmp_path / "styles.json", previews_dir=tmp_path / "previews")
    assert set(POLLING) <= set(values)
    differs_from_default({name: values[name] for name in POLLING})
    running = InProcessBot(settings_of(values), telegram)
    await running.start()
    try:
        telegram.user_sends(alice_chat, ALICE, photo=samples.jpeg(160, 120), caption="/upscale 2")
        [result] = await wait_media(telegram, alice_chat.id)
        telegram.user_sends(alice_chat, ALICE, text="/video seedance a paper boat")
        video = (await wait_media(telegram, alice_chat.id, 2))[1]
        telegram.user_sends(alice_chat, ALICE, text="/buy")
        offer = await wait_text(telegram, alice_chat.id, "in the plan")  # CREDIT_SUBSCRIPTION
        async with httpx.AsyncClient(base_url=f"http://{host}:{port}") as http:
            health = await http.get("/healthz")
            callback = {"taskId": "0" * 32, "status": 1}
            from_inside = await http.post(CALLBACK_PATH, json=callback, headers={"X-Forwarded-For": "127.0.0.1"})
            from_outside = await http.post(CALLBACK_PATH, json=callback, headers={"X-Forwarded-For": "203.0.113.9"})
    finally:
        await running.stop()
    assert (tmp_path / "chosen.db").exists()  # DATABASE_URL
    assert health.status_code == 200  # HTTP_HOST, HTTP_PORT
    # AIART_WEBHOOK_PATH, AIART_WEBHOOK_IPS, TRUSTED_PROXIES: the sender a loopback proxy forwarded is judged
    assert (from_inside.status_code, from_outside.status_code) == (200, 403)
    assert result.caption.endswith("· 2 credits")  # CREDIT_PRICES_FILE
    # FREE_CREDITS_FOR_VIDEO: the free allowance paid for 5 seconds at the price file's 1 credit a second
    assert video.media_kind == "video" and video.caption.endswith("· 5 credits")
    assert "0.83 ⭐ in the plan" in offer  # CREDIT_SUBSCRIPTION=300:250 beside CREDIT_PACKS=10:50
    service_calls = [r for r in sandbox.received if r.path.startswith("/v1/")]
    assert all(r.headers["authorization"] == f"Bearer {SERVICE_KEY}" for r in service_calls)  # AIART_API_KEY
    assert any(r.path == "/v1/upload/sign" for r in service_calls)  # IMAGE_HANDOFF=upload
    [summary] = [r.getMessage() for r in caplog_info.records if "is running" in r.getMessage()]
    assert sandbox.base_url in summary  # AIART_BASE_URL
    assert "1 listed user and those in 1 listed chat and 1 admin" in summary  # the allowlists and admins
    assert "7 a person a day" in summary and "service tokens a person a day" in summary  # FREE_CREDITS_PER_DAY
    # FREE_CREDITS_DAILY_BUDGET: its worst case at 2 credits an image
    assert "at most 30 free credits a day (FREE_CREDITS_DAILY_BUDGET), at worst 15 service tokens a day" in summary
    assert "media links" in summary and "service callbacks" in summary  # PUBLIC_URL, AIART_WEBHOOK_PATH


async def test_webhook_mode_with_its_settings_changed(tmp_path, telegram, sandbox):
    values = bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), webhook=True,
                          telegram_webhook_secret=WEBHOOK_SECRET, update_lease_s=5)
    differs_from_default({name: values[name] for name in WEBHOOK})
    running = InProcessBot(settings_of(values), telegram)
    await running.start()
    await running.stop()
    [set_webhook] = [call for call in telegram.calls if call.method == "setWebhook"]
    assert set_webhook.params["url"] == values["TELEGRAM_WEBHOOK_URL"]
    assert set_webhook.params["secret_token"] == WEBHOOK_SECRET


async def test_the_embedded_sandbox_with_its_settings_changed(tmp_path, telegram, alice_chat):
    values = bot_settings(telegram, None, sqlite_url(tmp_path / "bot.db"), sandbox_task_seconds=0.1,
                          sandbox_credits=4321, bot_admins=str(ALICE.id))
    differs_from_default({name: values[name] for name in EMBEDDED_SANDBOX})
    running = InProcessBot(settings_of(values), telegram)
    await running.start()
    try:
        telegram.user_sends(alice_chat, ALICE, text="/balance")
        balance = await wait_text(telegram, alice_chat.id, "4321")  # SANDBOX_CREDITS: the service's balance
    finally:
        await running.stop()
    assert "4321" in balance
