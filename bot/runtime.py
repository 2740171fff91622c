"""Wiring the parts together for a run: the service (or the embedded sandbox), the store, Telegram, the worker."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import signal
import socket
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta

import httpx
from telegram import Message, Update
from telegram.error import RetryAfter, TelegramError
from telegram.ext import Application

from bot.aiart import AiartClient
from bot.config import Settings
from bot.jobs.handoff import ImageHandoff
from bot.jobs.results import ResultFetcher
from bot.jobs.service import JobService, Quotas
from bot.jobs.worker import Worker, WorkerConfig
from bot.media import serve_media
from bot.operations.catalogue import build_catalogue
from bot.operations.styles import load_catalogue
from bot.sandbox import Sandbox, SandboxConfig
from bot.store import create_engine, migrate, session_factory
from bot.tg.app import ALLOWED_UPDATES, announce_commands, build_application, notifier_for
from bot.tg.context import Access, Deps
from bot.tg.notifier import retry_seconds

log = logging.getLogger(__name__)

#: seconds a SIGTERM gives in-flight handlers and worker steps to finish before they are cancelled
SHUTDOWN_GRACE_S = 15.0


@dataclass(frozen=True)
class ServiceConnection:
    """A client for the image service and the HTTP client under it (shared for result downloads)."""

    client: AiartClient
    http: httpx.AsyncClient
    sandbox: Sandbox | None


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
        log.info("no AIART_API_KEY set: using the embedded sandbox at %s", base_url)
    else:
        key = settings.aiart_api_key.get_secret_value()
        base_url, static_url = settings.aiart_base_url, settings.aiart_static_url
    try:
        timeout = httpx.Timeout(30.0, connect=10.0)
        limits = httpx.Limits(max_connections=max(10, settings.service_concurrency * 2))
        async with httpx.AsyncClient(timeout=timeout, limits=limits, follow_redirects=True) as http:
            client = AiartClient(http, base_url=base_url, api_key=key, static_url=static_url)
            yield ServiceConnection(client, http, sandbox)
    finally:
        if sandbox is not None:
            await sandbox.stop()


class UpdateIntake:
    """Long polling that confirms an update to Telegram only once its handlers have run.

    PTB's Updater confirms a batch with its next getUpdates, before the batch is handled, so a crash
    in between loses those messages. Here the offset stays at the oldest update still being handled,
    so after a crash Telegram sends it again; an update sent again that had already queued a job is
    skipped. Updates are handled concurrently, like PTB's `concurrent_updates`.
    """

    def __init__(self, application: Application, already_queued: Callable[[int, int], Awaitable[bool]], *,
                 allowed_updates: list[str], concurrency: int = 16, poll_timeout: int = 10,
                 grace: float = SHUTDOWN_GRACE_S) -> None:
        self._application = application
        self._already_queued = already_queued
        self._allowed = allowed_updates
        self._slots = asyncio.Semaphore(concurrency)
        self._poll_timeout = poll_timeout
        self._grace = grace
        self._handling: dict[int, asyncio.Task[None]] = {}
        self._handled: set[int] = set()  # done, but not confirmed while an older one is still handled
        self._highest: int | None = None
        #: ids up to this came in the first answer after start: a crashed run may have handled them
        self._redelivered_up_to: int | None = None
        self._first_fetch = True
        self._progress = asyncio.Event()

    @property
    def offset(self) -> int | None:
        """The getUpdates offset: confirms every update below the oldest one still being handled."""
        if self._handling:
            return min(self._handling)
        return None if self._highest is None else self._highest + 1

    async def run(self, stop: asyncio.Event) -> None:
        """Fetch and handle updates until `stop`; then let handlers finish (bounded) and confirm them."""
        with contextlib.suppress(TelegramError):  # a webhook left set would make every getUpdates fail
            await self._application.bot.delete_webhook()
        failures = 0
        while not stop.is_set():
            try:
                updates = await self._fetch(stop)
            except RetryAfter as error:
                await _sleep_unless(stop, retry_seconds(error))
                continue
            except Exception as error:  # TelegramError, or an answer PTB could not read: never end the loop
                failures += 1
                delay = min(30.0, 0.5 * 2 ** min(failures, 6))
                log.warning("fetching updates failed (%s); trying again in %.1f s", error, delay)
                await _sleep_unless(stop, delay)
                continue
            failures = 0
            if updates is None:
                break
            fresh = [update for update in updates
                     if update.update_id not in self._handling and update.update_id not in self._handled]
            for update in fresh:
                await self._start(update)
            if updates and not fresh:
                # only updates still being handled came back: wait for one to finish, not a busy loop
                await _sleep_unless(stop, 0.5, self._progress)
                self._progress.clear()
        await self._finish()

    async def _fetch(self, stop: asyncio.Event) -> list[Update] | None:
        """One getUpdates (long when nothing is being handled); None when `stop` came first."""
        offset = self.offset
        if offset is not None:
            self._handled = {update_id for update_id in self._handled if update_id >= offset}
        fetch = asyncio.ensure_future(self._application.bot.get_updates(
            offset=offset, timeout=0 if self._handling else self._poll_timeout, allowed_updates=self._allowed))
        await _sleep_unless(stop, None, fetch)
        if stop.is_set():
            # what it fetched stays unconfirmed, so Telegram sends it again to the next run
            fetch.cancel()
            await asyncio.gather(fetch, return_exceptions=True)
            return None
        updates = list(fetch.result())
        if self._first_fetch:
            self._first_fetch = False
            self._redelivered_up_to = updates[-1].update_id if updates else None
        return updates

    async def _start(self, update: Update) -> None:
        """Hand the update to its handlers in a task (in arrival order), unless it was handled before a crash."""
        self._highest = update.update_id if self._highest is None else max(self._highest, update.update_id)
        if await self._queued_before(update):
            log.info("update %s already queued a job before a restart; not handling it again", update.update_id)
            self._handled.add(update.update_id)
            return
        self._handling[update.update_id] = asyncio.create_task(self._handle(update))

    async def _handle(self, update: Update) -> None:
        try:
            async with self._slots:
                await self._application.process_update(update)
        except Exception:  # PTB's error handler saw handler errors already; this is a last resort
            log.exception("update %s could not be handled", update.update_id)
        finally:
            self._handling.pop(update.update_id, None)
            self._handled.add(update.update_id)
            self._progress.set()

    async def _queued_before(self, update: Update) -> bool:
        """Whether a redelivered update already queued a job that is still in progress."""
        if self._redelivered_up_to is None or update.update_id > self._redelivered_up_to:
            return False
        source = _source_message(update)
        if source is None:
            return False
        try:
            return await self._already_queued(*source)
        except Exception:  # the database is unreachable: handling it again beats dropping it
            log.exception("could not check update %s against stored jobs", update.update_id)
            return False

    async def _finish(self) -> None:
        """Give handlers the grace period, then confirm what was handled and cancel the rest."""
        if self._handling:
            await asyncio.wait(list(self._handling.values()), timeout=self._grace)
        offset = self.offset  # computed before cancelling: cancelled updates stay unconfirmed
        unfinished = list(self._handling.values())
        for task in unfinished:
            task.cancel()
        await asyncio.gather(*unfinished, return_exceptions=True)
        if unfinished:
            log.warning("%d update(s) still being handled were cancelled; Telegram will send them again",
                        len(unfinished))
        if offset is None:
            return
        try:
            await self._application.bot.get_updates(offset=offset, timeout=0, limit=1,
                                                    allowed_updates=self._allowed)
        except TelegramError as error:
            log.warning("could not confirm the handled updates (%s); Telegram will send them again", error)


async def _queued_for_message(jobs: JobService, chat_id: int, message_id: int) -> bool:
    """Whether a job in progress was queued for this user message (a redelivered update is then skipped)."""
    return any(job.reply_to_message_id == message_id for job in await jobs.active(chat_id))


def _source_message(update: Update) -> tuple[int, int] | None:
    """(chat id, message id) of the user's message a job made from this update replies to."""
    if update.message is not None:
        return update.message.chat_id, update.message.message_id
    query = update.callback_query
    menu = query.message if query is not None and isinstance(query.message, Message) else None
    if menu is not None and menu.reply_to_message is not None:
        return menu.chat_id, menu.reply_to_message.message_id
    return None


async def _sleep_unless(stop: asyncio.Event, seconds: float | None, *also: asyncio.Future[object] | asyncio.Event) -> None:
    """Sleep `seconds` (None: no limit), ending early when `stop` is set or any of `also` completes."""
    waiters = [asyncio.ensure_future(stop.wait())]
    waiters += [asyncio.ensure_future(item.wait()) if isinstance(item, asyncio.Event) else item for item in also]
    try:
        await asyncio.wait(waiters, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            if not any(waiter is item for item in also):
                waiter.cancel()


def worker_id(settings: Settings) -> str:
    """A name for this process's leases that survives a restart, so it can reclaim its own at start-up."""
    return settings.worker_id or socket.gethostname()


async def run_bot(settings: Settings, stop: asyncio.Event | None = None) -> None:
    """Run the bot with long polling until `stop` is set (or SIGINT/SIGTERM), then shut down cleanly."""
    if settings.telegram_bot_token is None:
        raise SystemExit("TELEGRAM_BOT_TOKEN is not set: get a token from @BotFather and put it in .env")
    stop = stop or _stop_on_signals()
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
                        access=Access(settings.bot_admins, settings.bot_allowed_users, settings.bot_allowed_chats))
            application = build_application(settings.telegram_bot_token.get_secret_value(),
                                            settings.telegram_api_url, deps)
            worker = Worker(sessions, service.client, notifier_for(application), catalogue,
                            handoff=ImageHandoff(service.client, media, mode=settings.image_handoff),
                            fetcher=ResultFetcher(service.http),
                            config=WorkerConfig(owner=worker_id(settings),
                                                service_concurrency=settings.service_concurrency,
                                                shutdown_grace=SHUTDOWN_GRACE_S))
            intake = UpdateIntake(application, functools.partial(_queued_for_message, jobs),
                                  allowed_updates=ALLOWED_UPDATES, grace=SHUTDOWN_GRACE_S)
            async with application:
                await announce_commands(application)
                await application.start()
                parts_stop = asyncio.Event()
                parts = [asyncio.create_task(intake.run(parts_stop)), asyncio.create_task(worker.run(parts_stop))]
                log.info("bot @%s is running", application.bot.username)
                await _until_stopped(stop, parts)
                log.info("stopping: no new updates; finishing in-flight work (at most %.0f s)", SHUTDOWN_GRACE_S)
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
