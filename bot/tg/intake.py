"""Crash-safe long polling: an update is confirmed to Telegram only once its handlers have run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from telegram import Message, Update
from telegram.error import RetryAfter, TelegramError
from telegram.ext import Application

from bot.tg.notifier import retry_seconds

log = logging.getLogger(__name__)

#: the most updates one getUpdates answers (Telegram's maximum, asked for explicitly)
FETCH_LIMIT = 100
#: after a fetch that brought nothing new, the longest wait for a handler to finish before fetching again
REFETCH_WAIT_S = 0.5


@dataclass
class _Lane:
    """One chat's updates in flight: handled one at a time, in arrival order."""

    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    in_flight: int = 0


class UpdateIntake:
    """Long polling that confirms an update to Telegram only once its handlers have run.

    PTB's Updater confirms a batch with its next getUpdates, before the batch is handled, so a crash
    in between loses those messages. Here the offset stays at the oldest update still being handled,
    so after a crash Telegram sends it again; an update sent again that had already queued a job is
    skipped. Each chat's updates are handled in order in the chat's own lane, and the lanes share
    `concurrency` handler slots, so a chat that floods the bot holds one slot, not all of them.
    """

    def __init__(self, application: Application, already_queued: Callable[[int, int], Awaitable[bool]], *,
                 allowed_updates: list[str], grace: float, concurrency: int = 16, poll_timeout: int = 10) -> None:
        self._application = application
        self._already_queued = already_queued
        self._allowed = allowed_updates
        self._concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency)
        self._poll_timeout = poll_timeout
        self._grace = grace
        self._handling: dict[int, asyncio.Task[None]] = {}
        self._handled: set[int] = set()  # done, but not confirmed while an older one is still handled
        self._lanes: dict[int, _Lane] = {}  # only chats with an update in flight
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

    @property
    def chats_in_flight(self) -> int:
        """How many chats have an update being handled or waiting for its turn."""
        return len(self._lanes)

    async def run(self, stop: asyncio.Event) -> None:
        """Fetch and handle updates until `stop`; then let handlers finish (bounded) and confirm them."""
        with contextlib.suppress(TelegramError):  # a webhook left set would make every getUpdates fail
            await self._application.bot.delete_webhook()
        failures = 0
        while not stop.is_set():
            if not self._worth_fetching():
                self._progress.clear()
                await _sleep_unless(stop, None, self._progress)
                continue
            self._progress.clear()  # a handler finishing from here on may move the offset
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
            if not fresh and self._handling:
                # only updates already held came back: fetch again once one is done, not in a busy loop
                await _sleep_unless(stop, REFETCH_WAIT_S, self._progress)
        await self._finish()

    def _worth_fetching(self) -> bool:
        """Whether a getUpdates now could bring work: every answer repeats the updates held above the offset."""
        self._forget_confirmed()
        if not self._handling:
            return True  # a long poll for whatever comes next
        if len(self._handling) + len(self._handled) >= FETCH_LIMIT:
            return False  # the answer could hold nothing but updates already held
        # the slots are about to run dry, or some are free for a chat whose updates wait beyond the held ones
        return len(self._handling) <= self._concurrency or len(self._lanes) < self._concurrency

    def _forget_confirmed(self) -> None:
        """Drop handled updates below the offset: the next getUpdates confirms them, and they never come back."""
        offset = self.offset
        if offset is not None:
            self._handled = {update_id for update_id in self._handled if update_id >= offset}

    async def _fetch(self, stop: asyncio.Event) -> list[Update] | None:
        """One getUpdates (long when nothing is being handled); None when `stop` came first."""
        offset = self.offset  # _worth_fetching, just before, forgot what it confirms
        fetch = asyncio.ensure_future(self._application.bot.get_updates(
            offset=offset, limit=FETCH_LIMIT, timeout=0 if self._handling else self._poll_timeout,
            allowed_updates=self._allowed))
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
        chat = update.effective_chat
        chat_id = None if chat is None else chat.id
        if chat_id is not None:
            # joined here, not in the task, so the lanes count it before the loop decides on the next fetch
            self._lanes.setdefault(chat_id, _Lane()).in_flight += 1
        self._handling[update.update_id] = asyncio.create_task(self._handle(update, chat_id))

    async def _handle(self, update: Update, chat_id: int | None) -> None:
        lane = None if chat_id is None else self._lanes[chat_id]
        try:
            # tasks take their first step in creation order, so the lane's lock serves its chat in arrival order
            async with lane.turn if lane is not None else contextlib.nullcontext():
                async with self._slots:
                    await self._application.process_update(update)
        except Exception:  # PTB's error handler saw handler errors already; this is a last resort
            log.exception("update %s could not be handled", update.update_id)
        finally:
            if chat_id is not None and lane is not None:
                lane.in_flight -= 1
                if lane.in_flight == 0:
                    del self._lanes[chat_id]  # no state is kept for a chat with nothing in flight
            self._handling.pop(update.update_id, None)
            self._handled.add(update.update_id)
            self._progress.set()

    async def _queued_before(self, update: Update) -> bool:
        """Whether a redelivered update already made a job (still running or long finished: either way it was answered)."""
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
