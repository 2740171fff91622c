"""Wiring the parts together for a run: the service (or the embedded sandbox), the store, Telegram, the worker."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import timedelta

import httpx

from bot.aiart import AiartClient
from bot.config import Settings
from bot.jobs.handoff import ImageHandoff
from bot.jobs.languages import LanguageChoices
from bot.jobs.polling import PollSchedule
from bot.jobs.results import ResultFetcher, ResultGuard, result_client
from bot.jobs.service import JobService, Quotas
from bot.jobs.worker import Worker, WorkerConfig
from bot.media import serve_media
from bot.operations.catalogue import build_catalogue
from bot.operations.styles import load_catalogue
from bot.sandbox import Sandbox, SandboxConfig
from bot.store import create_engine, migrate, session_factory
from bot.tg.app import ALLOWED_UPDATES, announce_commands, build_application, notifier_for
from bot.tg.context import Access, Deps
from bot.tg.intake import UpdateIntake
from bot.transport import AiohttpTransport

log = logging.getLogger(__name__)

#: seconds a SIGTERM gives in-flight handlers and worker steps to finish before they are cancelled
SHUTDOWN_GRACE_S = 15.0


@dataclass(frozen=True)
class ServiceConnection:
    """A client for the image service, the HTTP client under it, and the fetcher of its results."""

    client: AiartClient
    http: httpx.AsyncClient
    sandbox: Sandbox | None
    fetcher: ResultFetcher


@contextlib.asynccontextmanager
async def connect_service(settings: Settings) -> AsyncIterator[ServiceConnection]:
    """The configured service, or an embedded sandbox on a loopback port when no API key is set."""
    sandbox = None
    if settings.uses_sandbox:
        key = secrets.token_urlsafe(24)
        sandbox = Sandbox(SandboxConfig(api_key=key, task_seconds=settings.sandbox_task_seconds,
                                        credits=settings.sandbox_credits))
        base_url = await sandbox.start("127.0.0.1", 0)
        static_url = sandbox.static_url
        log.warning("SANDBOX MODE: AIART_API_KEY is not set, so the embedded sandbox at %s answers instead of the "
                    "image service; users get test pictures, marked 'sandbox' in their captions. Set AIART_API_KEY "
                    "to use the real service.", base_url)
    else:
        key = settings.aiart_api_key.get_secret_value()
        base_url, static_url = settings.aiart_base_url, settings.aiart_static_url
    try:
        timeout = httpx.Timeout(30.0, connect=10.0)
        limits = httpx.Limits(max_connections=max(10, settings.service_concurrency * 2))
        # results come only from public addresses, or from the service's own origins (the sandbox's loopback)
        guard = ResultGuard(trusted=(base_url, static_url), allowed_hosts=settings.aiart_result_hosts,
                            static_url=static_url)
        async with httpx.AsyncClient(timeout=timeout, transport=AiohttpTransport(limits),
                                     follow_redirects=True) as http, \
                result_client(guard, max_connections=settings.result_download_concurrency) as results:
            client = AiartClient(http, base_url=base_url, api_key=key, static_url=static_url)
            fetcher = ResultFetcher(results, guard=guard, concurrency=settings.result_download_concurrency)
            yield ServiceConnection(client, http, sandbox, fetcher)
    finally:
        if sandbox is not None:
            await sandbox.stop()


def worker_id(settings: Settings) -> str:
    """A name for this process's leases that survives a restart, so it can reclaim its own at start-up."""
    return settings.worker_id or socket.gethostname()


def worker_config(settings: Settings, *, shutdown_grace: float) -> WorkerConfig:
    """The worker's tuning from settings; its idle sleep shrinks with the poll time scale."""
    # the idle sleep is the longest the worker waits before looking for due work again: unscaled, a
    # time-scaled check (0.2 s away at scale 0.1) would look up to 10 scaled seconds late
    return WorkerConfig(owner=worker_id(settings), service_concurrency=settings.service_concurrency,
                        prepare_concurrency=settings.image_prepare_concurrency,
                        prepare_pixels=int(settings.image_prepare_megapixels * 1_000_000),
                        shutdown_grace=shutdown_grace, idle_sleep=WorkerConfig.idle_sleep * settings.poll_time_scale)


async def run_bot(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run the bot with long polling until `stop` is set (or SIGINT/SIGTERM), then shut down cleanly."""
    if settings.telegram_bot_token is None:
        raise SystemExit("TELEGRAM_BOT_TOKEN is not set: get a token from @BotFather and put it in .env")
    stop = stop or _stop_on_signals()
    grace = SHUTDOWN_GRACE_S  # read at run time, so a test can shorten it
    await migrate(settings.database_url)
    engine = create_engine(settings.database_url)
    sessions = session_factory(engine)
    styles = load_catalogue(settings.styles_file)
    catalogue = build_catalogue(styles)
    worker: Worker | None = None
    outcomes: list[object] = []
    try:
        async with connect_service(settings) as service, serve_media(settings) as media:
            jobs = JobService(sessions, deadline=timedelta(seconds=settings.job_deadline_s),
                              quotas=Quotas(settings.user_max_active_jobs, settings.user_max_jobs_per_day),
                              on_enqueued=lambda: worker.wake() if worker else None)
            deps = Deps(jobs=jobs, operations=catalogue, styles=styles, client=service.client,
                        languages=LanguageChoices(sessions),
                        access=Access(settings.bot_admins, settings.bot_allowed_users, settings.bot_allowed_chats))
            application = build_application(settings.telegram_bot_token.get_secret_value(),
                                            settings.telegram_api_url, deps, rate_limit=settings.telegram_rate_limit)
            notifier = notifier_for(application, sandbox=settings.uses_sandbox)
            worker = Worker(sessions, service.client, notifier, catalogue,
                            handoff=ImageHandoff(service.client, media, mode=settings.image_handoff),
                            fetcher=service.fetcher,
                            config=worker_config(settings, shutdown_grace=grace),
                            schedule=PollSchedule.for_policy(settings.poll_policy,
                                                             time_scale=settings.poll_time_scale))
            intake = UpdateIntake(application, jobs.made_from_message,
                                  allowed_updates=ALLOWED_UPDATES, grace=grace)
            async with application:
                await announce_commands(application)
                await application.start()
                parts_stop = asyncio.Event()
                parts = [asyncio.create_task(intake.run(parts_stop)), asyncio.create_task(worker.run(parts_stop))]
                log.info("bot @%s is running", application.bot.username)
                await _until_stopped(stop, parts)
                log.info("stopping: no new updates; finishing in-flight work (at most %.0f s)", grace)
                parts_stop.set()
                outcomes = await asyncio.gather(*parts, return_exceptions=True)
                await application.stop()
    finally:
        await engine.dispose()
    failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    if failures:
        raise failures[0]
    log.info("stopped cleanly")


async def _until_stopped(stop: asyncio.Event, parts: list[asyncio.Task[None]]) -> None:
    """Wait for `stop`, or for a part that ended by itself (it crashed: the bot stops, then raises its error)."""
    stopping = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait([stopping, *parts], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(sig, stop.set)
    return stop
