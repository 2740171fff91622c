"""Wiring the parts together for a run: the service (or the embedded sandbox), the store, Telegram, the worker."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import TypeVar
from urllib.parse import urlsplit

import httpx
from sqlalchemy import make_url
from sqlalchemy.ext.asyncio import AsyncEngine
from telegram.error import BadRequest, InvalidToken, TelegramError
from telegram.ext import Application

from bot.aiart import AiartClient
from bot.aiart.client import RetryPolicy
from bot.aiart.errors import AiartError, Unauthorized
from bot.aiart.models import Credits
from bot.chats.conversations import Conversations
from bot.chats.languages import LanguageChoices
from bot.chats.people import PeopleService
from bot.chats.stored_inputs import StoredInputs
from bot.clock import utcnow
from bot.config import Settings
from bot.credits import CreditPolicy, CreditService, load_prices, parse_packs, parse_subscription
from bot.credits.packs import Pack
from bot.credits.prices import Prices
from bot.credits.subscription import SubscriptionPlan
from bot.http import HttpServer, Readiness, build_app, derive_webhook_secret
from bot.http.app_api import MiniApp
from bot.http.app_refs import PhotoRefs
from bot.http.app_routes import APP_PATH
from bot.http.probes import ping_database, unfinished_jobs
from bot.http.server import Routes
from bot.images import PreparationSlots
from bot.jobs.alarm import ServiceAlarm
from bot.jobs.handoff import ImageHandoff
from bot.jobs.polling import PollSchedule
from bot.jobs.results import ResultFetcher, ResultGuard, result_client
from bot.jobs.service import JobService, Quotas
from bot.jobs.worker import Worker, WorkerConfig
from bot.media import MediaLinks
from bot.metrics import Metrics
from bot.operations.catalogue import Operation
from bot.operations.registry import Extra, build_catalogue
from bot.operations.styles import StyleCatalogue, load_catalogue
from bot.sandbox import Sandbox, SandboxConfig
from bot.startup import (
    StartupError,
    database_problem,
    free_credits_bound,
    guest_mode,
    port_problem,
    require_token,
    shown_database,
    who_may_use,
)
from bot.store import create_engine, migrate, session_factory
from bot.store.heartbeats import PollerLock
from bot.tg.app import ALLOWED_UPDATES, admin_alarm, announce_commands, build_application, notifier_for
from bot.tg.budget import budget_spent
from bot.tg.context import Access, Deps
from bot.tg.handlers.payments import invoice_link
from bot.tg.heartbeats import Heartbeat, replica_id
from bot.tg.housekeeping import Housekeeping
from bot.tg.inbox import KEEP_HANDLED, UpdateInbox
from bot.tg.intake import LeaderPolling, UpdateIntake
from bot.tg.miniapp import AppLinks, prepare_share, set_menu_button
from bot.tg.notifier import TelegramNotifier
from bot.tg.reconcile import StarReconciler
from bot.transport import AiohttpTransport

log = logging.getLogger(__name__)

#: seconds a SIGTERM gives in-flight handlers and worker steps to finish before they are cancelled
SHUTDOWN_GRACE_S = 15.0
#: seconds the start-up balance check may take before the bot starts without it
SERVICE_PROBE_S = 5.0

_T = TypeVar("_T")
_V = TypeVar("_V")


@dataclass(frozen=True)
class ServiceConnection:
    """A client for the image service, the HTTP client under it, and the fetcher of its results."""

    client: AiartClient
    http: httpx.AsyncClient
    sandbox: Sandbox | None
    fetcher: ResultFetcher


@contextlib.asynccontextmanager
async def connect_service(settings: Settings, extra_operations: Extra = ()) -> AsyncIterator[ServiceConnection]:
    """The configured service, or an embedded sandbox on a loopback port when no API key is set."""
    sandbox = None
    if settings.uses_sandbox:
        key = secrets.token_urlsafe(24)
        sandbox = Sandbox(SandboxConfig(api_key=key, task_seconds=settings.sandbox_task_seconds,
                                        credits=settings.sandbox_credits, extra_operations=tuple(extra_operations)))
        base_url = await sandbox.start("127.0.0.1", 0)
        static_url = sandbox.static_url
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


@dataclass(frozen=True)
class Files:
    """What the settings name, loaded: a bad file or list stops the bot before anything runs."""

    styles: StyleCatalogue
    prices: Prices
    packs: tuple[Pack, ...]
    catalogue: dict[str, Operation]
    plan: SubscriptionPlan | None

    @classmethod
    def load(cls, settings: Settings, extra_operations: Extra) -> Files:
        """Load them, or raise StartupError naming the setting."""
        styles = _load("STYLES_FILE", settings.styles_file, load_catalogue)
        return cls(styles, _load("CREDIT_PRICES_FILE", settings.credit_prices_file, load_prices),
                   _load("CREDIT_PACKS", settings.credit_packs, parse_packs), build_catalogue(styles, extra_operations),
                   _load("CREDIT_SUBSCRIPTION", settings.credit_subscription, parse_subscription))


@dataclass(frozen=True)
class Parts:
    """Everything one run is made of, built before any of it starts (build_parts); run_bot starts and stops it."""

    application: Application
    deps: Deps
    worker: Worker
    updates: UpdateInbox | LeaderPolling
    server: HttpServer
    heartbeat: Heartbeat
    housekeeping: Housekeeping
    alarm: ServiceAlarm | None
    reconciler: StarReconciler | None
    media: MediaLinks | None
    callback_path: str | None


async def run_bot(settings: Settings, stop: asyncio.Event | None = None, *, grace: float = SHUTDOWN_GRACE_S,
                  extra_operations: Extra = ()) -> None:
    """Run the bot (long polling, or webhook mode with TELEGRAM_WEBHOOK_URL) until `stop` is set (or SIGINT/SIGTERM).

    On stop, in-flight handlers and worker steps get `grace` seconds; `extra_operations` are offered after the
    package's own (bot.operations.registry). A problem the operator must fix (the database, the port, the
    token, a file a setting names) raises StartupError before anything runs, with everything opened so far
    closed again. Each part is closed in the reverse order it was started in.
    """
    token, stop = require_token(settings), stop or _stop_on_signals()
    files = Files.load(settings, extra_operations)
    await _migrate(settings)
    failures: list[BaseException] = []  # of the parts that ran: raised once everything is closed
    async with contextlib.AsyncExitStack() as stack:
        engine = create_engine(settings.database_url)
        stack.push_async_callback(engine.dispose)
        service = await stack.enter_async_context(connect_service(settings, extra_operations))
        parts = build_parts(settings, token, engine, service, files, grace=grace)
        local = await _listen(parts.server, settings)
        stack.push_async_callback(parts.server.stop)
        await _connect_telegram(parts.application, settings)
        await stack.enter_async_context(parts.application)
        balance = await _introduce(parts, settings, service, local)
        await parts.application.start()
        await parts.heartbeat.beat()  # this replica's share of the budget before it sends anything
        # it keeps beating (its share of the budget taken) until it can send nothing more: stopped after the rest
        chores = await stack.enter_async_context(_running([parts.housekeeping.run], failures))
        stack.push_async_callback(parts.application.stop)
        if parts.alarm is not None:
            stack.push_async_callback(parts.alarm.close)
        loops = [parts.updates.run, parts.worker.run, *([parts.reconciler.run] if parts.reconciler else [])]
        tasks = await stack.enter_async_context(_running(loops, failures))
        _announce(settings, parts.application.bot.username, service, files.prices, local, balance,
                  media=parts.media is not None, callbacks=parts.callback_path is not None,
                  app=parts.deps.app_links is not None,
                  guest=bool(parts.application.bot.bot.supports_guest_queries))
        await _until_stopped(stop, [*tasks, *chores])
        log.info("stopping: no new updates; finishing in-flight work (at most %.0f s)", grace)
    if failures:
        raise failures[0]
    log.info("stopped cleanly")


def build_parts(settings: Settings, token: str, engine: AsyncEngine, service: ServiceConnection, files: Files, *,
                grace: float) -> Parts:
    """Every part of a run, each built once with all it needs."""
    sessions, metrics = session_factory(engine), Metrics()
    media, callback_path, owner = media_links(settings), service_callback_path(settings), worker_id(settings)
    policy = CreditPolicy(files.catalogue, files.prices, settings.free_credits_per_day, files.packs, files.plan,
                          settings.free_budget, free_for_video=settings.free_credits_for_video)
    queued = asyncio.Event()  # the job service sets it as it queues a job: the worker looks for work at once
    jobs = JobService(sessions, deadline=timedelta(seconds=settings.job_deadline_s), credits=policy, metrics=metrics,
                      quotas=Quotas(settings.user_max_active_jobs, 0), on_enqueued=queued.set,
                      # called only once updates flow, long after `application` below is built
                      on_free_budget_spent=lambda: budget_spent(application, settings),
                      deadlines={operation.name: timedelta(seconds=operation.deadline_s)
                                 for operation in files.catalogue.values() if operation.deadline_s})
    deps = Deps(jobs=jobs, credits=CreditService(sessions, policy), operations=files.catalogue, styles=files.styles,
                client=service.client, people=PeopleService(sessions), languages=LanguageChoices(sessions),
                access=Access(settings.bot_admins, settings.bot_allowed_users, settings.bot_allowed_chats),
                conversations=Conversations(sessions), app_links=app_links(settings, token), clock=utcnow)
    application = build_application(token, settings.telegram_api_url, deps, rate_limit=settings.telegram_rate_limit,
                                    metrics=metrics)
    stored = StoredInputs(deps.conversations)
    # the embedded sandbox, or a service that says in its answers that it is a sandbox
    notifier = notifier_for(application, sandbox=lambda: service.sandbox is not None or service.client.sandbox,
                            stored=stored, media=media)
    alarm = (ServiceAlarm(admin_alarm(application, settings.bot_admins), shared=deps.conversations)
             if settings.bot_admins else None)
    schedule = PollSchedule.for_policy(settings.poll_policy, time_scale=settings.poll_time_scale,
                                       callbacks=callback_path is not None)
    worker = Worker(sessions, service.client, notifier, files.catalogue, fetcher=service.fetcher,
                    handoff=ImageHandoff(service.client, media, mode=settings.image_handoff),
                    config=worker_config(settings, shutdown_grace=grace), schedule=schedule, metrics=metrics,
                    alarm=alarm, queued=queued)
    flood_notice = application.bot_data.flood_notice
    updates: UpdateInbox | LeaderPolling
    if settings.webhook_mode:
        updates = UpdateInbox(application, sessions, jobs.made_from_update, owner=owner, grace=grace,
                              lease=timedelta(seconds=settings.update_lease_s), metrics=metrics,
                              flood_notice=flood_notice)
    else:
        updates = LeaderPolling(PollerLock(engine), lambda: UpdateIntake(
            application, jobs.made_from_update, allowed_updates=ALLOWED_UPDATES, grace=grace,
            forget_handled=lambda: jobs.forget_updates(KEEP_HANDLED), flood_notice=flood_notice))
    webhook = isinstance(updates, UpdateInbox)
    routes = Routes(media=media, callback_path=callback_path, poll_now=worker.check_now,
                    callback_ips=settings.aiart_webhook_ips, trusted_proxies=settings.forwarding_proxies,
                    mini_app=mini_app(token, deps, application, notifier, stored, previews=settings.previews_dir,
                                      preparation=worker.preparation),
                    webhook_path=(urlsplit(settings.telegram_webhook_url or "").path or "/") if webhook else None,
                    webhook_secret=webhook_secret(settings) if webhook else None,
                    accept_update=updates.accept if isinstance(updates, UpdateInbox) else None)
    readiness = Readiness(check_database=lambda: ping_database(sessions),
                          loops={"worker": lambda: worker.last_turn, "intake": lambda: updates.last_turn})
    server = HttpServer(build_app(readiness, metrics, routes, jobs_waiting=lambda: unfinished_jobs(sessions)))
    shared = engine.dialect.name == "postgresql"
    heartbeat = Heartbeat(sessions, replica=replica_id(owner), shared=shared,
                          limiter=application.bot.rate_limiter if settings.telegram_rate_limit else None)
    # Stars on sale: the ledger follows Telegram's record of them
    reconciler = (StarReconciler(application.bot, deps.credits, deps.languages, admins=settings.bot_admins)
                  if policy.on_sale else None)
    return Parts(application, deps, worker, updates, server, heartbeat,
                 Housekeeping(application, sessions, heartbeat, shared=shared), alarm, reconciler, media, callback_path)


async def _migrate(settings: Settings) -> None:
    try:
        await migrate(settings.database_url)
    except Exception as error:  # whatever the driver raises, the operator's next step is the same
        raise database_problem(settings.database_url, error) from error


async def _introduce(parts: Parts, settings: Settings, service: ServiceConnection, local: str) -> Credits | None:
    """Before updates flow: the service's balance, its callbacks, the command menus, the menu button, the webhook."""
    balance = await _probe_service(service, settings)
    if service.sandbox is not None and parts.callback_path is not None:
        # the embedded sandbox calls the bot's own endpoint back, on loopback (known once the server listens)
        service.sandbox.config.webhook_url = _loopback(local) + parts.callback_path
    await announce_commands(parts.application)
    if parts.deps.app_links is not None:
        await set_menu_button(parts.application.bot, parts.deps.app_links)
    if settings.webhook_mode:
        await _set_webhook(parts.application, settings)
    if not parts.application.bot.supports_inline_queries:
        log.info("inline mode is off: turn it on in BotFather (/setinline) to use the bot in any chat")
    return balance


@contextlib.asynccontextmanager
async def _running(loops: list[Callable[[asyncio.Event], Awaitable[None]]],
                   failures: list[BaseException]) -> AsyncIterator[list[asyncio.Task[None]]]:
    """Run each loop in a task for the block; then stop them all and wait; what they raised goes into `failures`."""
    stop = asyncio.Event()
    tasks = [asyncio.create_task(loop(stop)) for loop in loops]
    try:
        yield tasks
    finally:
        stop.set()
        failures += [outcome for outcome in await asyncio.gather(*tasks, return_exceptions=True)
                     if isinstance(outcome, BaseException)]


def _load(setting: str, value: _V, load: Callable[[_V], _T]) -> _T:
    """What a setting names (a file, a list), loaded; a bad one stops the bot with one line naming the setting."""
    try:
        return load(value)
    except (OSError, ValueError) as error:
        raise StartupError(f"{setting}: {error}") from error


async def _listen(server: HttpServer, settings: Settings) -> str:
    """Start the HTTP server before anything talks to Telegram, so a taken port stops the bot first."""
    try:
        return await server.start(settings.listen_host, settings.http_port)
    except OSError as error:
        await server.stop()
        raise port_problem(settings.listen_host, settings.http_port, error) from error


async def _connect_telegram(application: Application, settings: Settings) -> None:
    """getMe: the token is checked and the Bot API reached, or the bot stops saying which."""
    try:
        await application.bot.initialize()
    except InvalidToken as error:
        await application.bot.shutdown()
        raise StartupError(f"Telegram rejected TELEGRAM_BOT_TOKEN (the Bot API at {settings.telegram_api_url} "
                           "answered that it does not know this token): copy the token again from @BotFather "
                           "(/mybots → your bot → API Token)") from error
    except TelegramError as error:
        await application.bot.shutdown()
        raise StartupError(f"cannot reach the Bot API at {settings.telegram_api_url} ({error.message}): check the "
                           "network, a firewall or proxy, or TELEGRAM_API_URL") from error


async def _probe_service(service: ServiceConnection, settings: Settings) -> Credits | None:
    """Ask the service its balance once: a refused key stops the bot; the answer says whether it is a sandbox."""
    if service.sandbox is not None:
        return None
    try:
        return await asyncio.wait_for(service.client.credits(retry=RetryPolicy(attempts=1)), SERVICE_PROBE_S)
    except Unauthorized as error:
        raise StartupError(f"the image service at AIART_BASE_URL ({settings.aiart_base_url}) refused AIART_API_KEY: "
                           "copy the key again from the provider's developer platform (Settings → API Key "
                           "Management)") from error
    except (AiartError, TimeoutError) as error:
        # not fatal: jobs wait in the database and are retried once the service answers
        log.warning("the image service at AIART_BASE_URL (%s) did not answer at start-up (%s); jobs wait until "
                    "it does", settings.aiart_base_url, error or type(error).__name__)
        return None


def _announce(settings: Settings, username: str, service: ServiceConnection, prices: Prices, local: str,
              balance: Credits | None, *, media: bool, callbacks: bool, app: bool = False,
              guest: bool = False) -> None:
    """The start-up summary, and a warning for each choice an operator should make on purpose."""
    sandbox = service.sandbox is not None or service.client.sandbox
    if service.sandbox is not None:
        log.warning("SANDBOX MODE: AIART_API_KEY is not set, so the embedded sandbox answers instead of the image "
                    "service; users get test pictures, marked 'sandbox' in their captions. Set AIART_API_KEY to "
                    "use the real service.")
        where = "sandbox (embedded; AIART_API_KEY is not set)"
    elif sandbox:
        log.warning("SANDBOX MODE: the service at AIART_BASE_URL (%s) says it is a sandbox; users get test "
                    "pictures, marked 'sandbox' in their captions. Point AIART_BASE_URL at the real service and "
                    "set its AIART_API_KEY to go live.", settings.aiart_base_url)
        where = f"sandbox at {settings.aiart_base_url}"
    else:
        left = f", {balance.remaining} tokens left" if balance is not None else ""
        where = f"{settings.aiart_base_url}{left}"
    if not sandbox and not settings.bot_allowed_users and not settings.bot_allowed_chats \
            and settings.free_credits_per_day:
        log.warning("anyone who finds @%s may use it, and its free credits (FREE_CREDITS_PER_DAY=%d a person a day) "
                    "are paid from your service balance: set BOT_ALLOWED_USERS or BOT_ALLOWED_CHATS (README, "
                    "'Restrict it'), or FREE_CREDITS_PER_DAY=0", username, settings.free_credits_per_day)
    store = make_url(settings.database_url)
    served = ", ".join(["/healthz /readyz /metrics", *(["media links"] if media else []),
                        *(["the Mini App (/app/)"] if app else []),
                        *(["the Telegram webhook"] if settings.webhook_mode else []),
                        *(["service callbacks"] if callbacks else [])])
    log.info("bot @%s is running (%s)\n  store:   %s\n  service: %s\n  users:   %s\n  credits: %s\n  http:    %s (%s)"
             "\n  guest:   %s",
             username, f"webhook at {settings.telegram_webhook_url}" if settings.webhook_mode else "long polling",
             f"{store.get_backend_name()} {shown_database(settings.database_url)}", where, who_may_use(settings),
             free_credits_bound(settings, prices, sandbox=sandbox), local, served, guest_mode(guest))


def webhook_secret(settings: Settings) -> str:
    """TELEGRAM_WEBHOOK_SECRET, or one derived from the bot token (the same on every replica)."""
    if settings.telegram_webhook_secret is not None:
        return settings.telegram_webhook_secret.get_secret_value()
    assert settings.telegram_bot_token is not None
    return derive_webhook_secret(settings.telegram_bot_token.get_secret_value())


def service_callback_path(settings: Settings) -> str | None:
    """Where the service's callbacks are served: AIART_WEBHOOK_PATH, or for the embedded sandbox a random path."""
    if settings.aiart_webhook_path:
        return settings.aiart_webhook_path
    if settings.uses_sandbox:
        return "/aiart/callback/" + secrets.token_urlsafe(16)
    return None


def app_links(settings: Settings, token: str) -> AppLinks | None:
    """Where the Mini App's page is; None unless PUBLIC_URL is https (Telegram opens Mini Apps only over https)."""
    if not settings.public_url or not settings.public_url.startswith("https://"):
        return None
    return AppLinks(settings.public_url.rstrip("/") + APP_PATH, PhotoRefs(token))


def mini_app(token: str, deps: Deps, application: Application, notifier: TelegramNotifier,
             stored: StoredInputs, *, preparation: PreparationSlots, previews: Path | None = None) -> MiniApp | None:
    """The Mini App's API over the bot's own services; None when it is off."""
    if deps.app_links is None:
        return None
    credits, languages = deps.credits, deps.languages

    async def chosen_language(user_id: int) -> str | None:
        return (await languages.chosen(chat_id=None, user_id=user_id)).user

    async def spendable(user_id: int) -> int:
        balance = await credits.balance(user_id, chat_id=user_id, chat_type="private")
        return balance.credits + balance.free_left + balance.plan

    return MiniApp(bot_token=token, refs=deps.app_links.refs, jobs=deps.jobs, people=deps.people,
                   operations=deps.operations, styles=deps.styles, stored=stored, fetch_file=notifier.fetch_input,
                   share=lambda user_id, file_id, kind: prepare_share(application.bot, user_id, file_id, kind),
                   allowed=lambda user_id: deps.access.allows(user_id, user_id), chosen_language=chosen_language,
                   spendable=spendable, previews=previews, can_buy=credits.policy.on_sale,
                   packs=credits.policy.packs,
                   invoice_link=lambda language, pack: invoice_link(application.bot, language, pack),
                   preparation=preparation)


def media_links(settings: Settings) -> MediaLinks | None:
    """The store behind signed media links, served by the HTTP server; None without PUBLIC_URL."""
    if not settings.public_url:
        return None
    secret = settings.media_secret.get_secret_value().encode() if settings.media_secret else None
    return MediaLinks(settings.public_url, secret=secret, ttl=settings.media_ttl_s)


async def _set_webhook(application: Application, settings: Settings) -> None:
    """setWebhook with the URL, the secret (never logged) and the update types the bot handles."""
    try:
        await application.bot.set_webhook(settings.telegram_webhook_url or "", secret_token=webhook_secret(settings),
                                          allowed_updates=ALLOWED_UPDATES)
    except BadRequest as error:
        raise StartupError(f"Telegram refused TELEGRAM_WEBHOOK_URL ({settings.telegram_webhook_url}): {error.message}; "
                           "it takes an https URL on port 443, 80, 88 or 8443") from error
    log.info("webhook set to %s", settings.telegram_webhook_url)


def _loopback(local: str) -> str:
    """The server's local URL as reached from this host (a wildcard address is reached on loopback)."""
    parts = urlsplit(local)
    if parts.hostname in ("0.0.0.0", "::"):
        return f"{parts.scheme}://127.0.0.1:{parts.port}"
    return local


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
