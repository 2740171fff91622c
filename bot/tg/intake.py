"""Crash-safe long polling: an update is confirmed to Telegram only once its handlers have run."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Protocol

from telegram import Update
from telegram.error import RetryAfter, TelegramError
from telegram.ext import Application

from bot.store.inbox import HANDLING_UPDATE, Handling
from bot.tg.answers import settle
from bot.tg.context import FloodNotice, is_payment, lane_chat_id, never_dropped, update_sender_id
from bot.tg.flood import CHAT_SHARE, FLOOD_QUIET_S, SENDER_SHARE
from bot.tg.notifier import retry_seconds
from bot.waiting import LendingSlots

log = logging.getLogger(__name__)

#: the most updates one getUpdates answers (Telegram's maximum, asked for explicitly)
FETCH_LIMIT = 100
#: after a fetch that brought nothing new, the longest wait for a handler to finish before fetching again
REFETCH_WAIT_S = 0.5
#: chats remembered as flooding before those quiet for FLOOD_QUIET_S are forgotten
_FLOODS_KEPT = 1024
#: how often the record of updates that made a job is pruned (bot.store.inbox)
FORGET_EVERY_S = 600.0



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
    skipped: a job is stored with its update's id marked handled in the same transaction
    (bot.store.inbox), and the updates of the first answer after a start are looked up by id. Each
    chat's updates are handled in order in the chat's own lane, and the lanes share `concurrency`
    handler slots, so a chat that floods the bot holds one slot, not all of them. A button press is
    answered once, whatever becomes of its update (bot.tg.answers).

    Fair under flood: a getUpdates answer shows at most 100 updates above the offset, so whatever the
    intake holds unconfirmed hides what comes after it. One chat may hold CHAT_SHARE updates and one
    sender SENDER_SHARE; an update beyond its share is dropped (confirmed unhandled, as if handled),
    and the chat gets one `flood_notice` per flood. Payments (`is_payment`) are outside every share,
    lane and slot: they are handled at once, however busy their chat. A handler that must wait for its chat's flood
    limit (about one message a second) detaches (ON_WAIT): its update is confirmed, its slot and
    its chat's turn freed while it waits (the limiter keeps the chat's posts in order), and it
    finishes in the background, still counted in its chat's share. So
    a chat waiting to be answered holds its own lane, never the offset or the slots others need; the
    price is that a crash in that wait loses what the detached handler had still to do.
    """

    def __init__(self, application: Application, already_handled: Callable[[int], Awaitable[bool]], *,
                 allowed_updates: list[str], grace: float, concurrency: int = 16, poll_timeout: int = 10,
                 flood_notice: FloodNotice | None = None,
                 forget_handled: Callable[[], Awaitable[object]] | None = None) -> None:
        self._application = application
        self._already_handled = already_handled
        self._forget_handled = forget_handled
        self._forgotten_at: float | None = None
        self._allowed = allowed_updates
        self._concurrency = concurrency
        self._slots = LendingSlots(concurrency)
        self._poll_timeout = poll_timeout
        self._grace = grace
        self._handling: dict[int, asyncio.Task[None]] = {}
        self._detached: dict[int, asyncio.Task[None]] = {}  # confirmed, but the handler waits to post
        self._handled: set[int] = set()  # done, but not confirmed while an older one is still handled
        self._lanes: dict[int, _Lane] = {}  # only chats with an update in flight
        self._highest: int | None = None
        #: ids up to this came in the first answer after start: a crashed run may have handled them
        self._redelivered_up_to: int | None = None
        self._first_fetch = True
        self._progress = asyncio.Event()
        self._senders: dict[int, int] = {}  # sender -> updates held, only senders with some
        self._floods: dict[int, float] = {}  # chat -> when an update of it was last dropped
        self._flood_notice = flood_notice
        self._notices: set[asyncio.Task[None]] = set()
        self._answering: set[asyncio.Task[None]] = set()  # answers to presses skipped or dropped
        self._clock = time.monotonic
        #: updates dropped because their chat or sender had used its share
        self.dropped = 0
        #: monotonic time the loop last turned (/readyz)
        self.last_turn = time.monotonic()

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
            self.last_turn = time.monotonic()
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
            await self._forget_old()
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
        if await self._handled_before(update):
            log.info("update %s already made a job before a restart; not handling it again", update.update_id)
            self._handled.add(update.update_id)
            self._settle_later(update)  # its press may have gone unanswered when the process stopped
            return
        chat_id = lane_chat_id(update)
        sender = update_sender_id(update)
        payment = is_payment(update)
        if never_dropped(update):
            # money moved or is about to (queued behind nothing: Telegram waits 10 s), or a chosen inline result
            chat_id = sender = None
        lane = self._lanes.get(chat_id) if chat_id is not None else None
        if (lane is not None and lane.in_flight >= CHAT_SHARE) or (
                sender is not None and self._senders.get(sender, 0) >= SENDER_SHARE):
            self._drop(update, chat_id)
            return
        if chat_id is not None:
            # joined here, not in the task, so the lanes count it before the loop decides on the next fetch
            self._lanes.setdefault(chat_id, _Lane()).in_flight += 1
        if sender is not None:
            self._senders[sender] = self._senders.get(sender, 0) + 1
        self._handling[update.update_id] = asyncio.create_task(self._handle(update, chat_id, sender,
                                                                            slotted=not payment))

    def _drop(self, update: Update, chat_id: int | None) -> None:
        """Confirm an update beyond its chat's or sender's share unhandled; tell the chat once per flood."""
        self.dropped += 1
        self._handled.add(update.update_id)
        self._settle_later(update)
        if chat_id is None:
            return
        now = self._clock()
        last = self._floods.get(chat_id)
        self._floods[chat_id] = now
        if len(self._floods) > _FLOODS_KEPT:
            self._floods = {chat: at for chat, at in self._floods.items() if now - at < FLOOD_QUIET_S}
        if last is not None and now - last < FLOOD_QUIET_S:
            return
        log.warning("chat %s is flooding the bot: dropping its updates beyond %d at once", chat_id, CHAT_SHARE)
        if self._flood_notice is not None:
            # in a task of its own: the notice waits for the chat's flood limit like any message
            self._background(self._notices, self._notify(update))

    def _settle_later(self, update: Update) -> None:
        """Answer a skipped update's button press (if it is one), without holding the loop up."""
        if update.callback_query is not None:
            self._background(self._answering, settle(self._application, update))

    @staticmethod
    def _background(tasks: set[asyncio.Task[None]], work: Coroutine[object, object, None]) -> None:
        task = asyncio.create_task(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def _notify(self, update: Update) -> None:
        try:
            await self._flood_notice(update)
        except Exception:  # a notice is a courtesy
            log.warning("could not send a flood notice for update %s", update.update_id, exc_info=True)

    async def _handle(self, update: Update, chat_id: int | None, sender: int | None, *, slotted: bool = True) -> None:
        lane = None if chat_id is None else self._lanes[chat_id]
        holds_turn = False

        def detach() -> None:
            nonlocal holds_turn
            self._detach(update.update_id)
            if holds_turn:  # the chat's next update may start; the rate limiter keeps the posts in order
                holds_turn = False
                lane.turn.release()

        try:
            if lane is not None:
                # tasks take their first step in creation order, so the lane's lock serves its chat in arrival order
                await lane.turn.acquire()
                holds_turn = True
            # a payment waits for no shared slot: it gets one of its own (and still detaches to wait to post)
            async with (self._slots if slotted else LendingSlots(1)).hold(on_lend=detach):
                HANDLING_UPDATE.set(Handling(update.update_id))  # a job stored by its handler marks it handled
                try:
                    await self._application.process_update(update)
                except Exception:  # PTB's error handler saw handler errors already; this is a last resort
                    log.exception("update %s could not be handled", update.update_id)
            await settle(self._application, update)  # a press no handler answered (or one that failed)
        finally:
            if holds_turn:
                lane.turn.release()
            if chat_id is not None and lane is not None:
                lane.in_flight -= 1
                if lane.in_flight == 0:
                    del self._lanes[chat_id]  # no state is kept for a chat with nothing in flight
            if sender is not None:
                self._senders[sender] -= 1
                if self._senders[sender] == 0:
                    del self._senders[sender]
            if self._detached.pop(update.update_id, None) is None:
                self._handling.pop(update.update_id, None)
                self._handled.add(update.update_id)
                self._progress.set()

    def _detach(self, update_id: int) -> None:
        """Count an update as handled while its handler waits to post: the offset may move past it."""
        task = self._handling.pop(update_id, None)
        if task is not None:
            self._detached[update_id] = task
            self._handled.add(update_id)
            self._progress.set()

    async def _handled_before(self, update: Update) -> bool:
        """Whether an update of the first answer after a start made a job before (a crashed run handled it)."""
        if self._redelivered_up_to is None or update.update_id > self._redelivered_up_to:
            return False
        try:
            return await self._already_handled(update.update_id)
        except Exception:  # the database is unreachable: handling it again beats dropping it
            log.exception("could not check update %s against the handled ones", update.update_id)
            return False

    async def _forget_old(self) -> None:
        """Prune the record of handled updates now and then (Telegram keeps an update a day at most)."""
        now = time.monotonic()
        if self._forget_handled is None or (self._forgotten_at is not None
                                            and now - self._forgotten_at < FORGET_EVERY_S):
            return
        self._forgotten_at = now
        try:
            await self._forget_handled()
        except Exception:
            log.warning("could not forget old handled updates", exc_info=True)

    async def _finish(self) -> None:
        """Give handlers the grace period, then confirm what was handled and cancel the rest."""
        if self._handling or self._detached or self._answering:
            # an answer is one quick call: the presses skipped or dropped are confirmed below, so answer them now
            await asyncio.wait([*self._handling.values(), *self._detached.values(), *self._answering],
                               timeout=self._grace)
        offset = self.offset  # computed before cancelling: cancelled updates stay unconfirmed
        unfinished = list(self._handling.values())
        detached = list(self._detached.values())
        for task in unfinished + detached:
            task.cancel()
        await asyncio.gather(*unfinished, *detached, return_exceptions=True)
        if unfinished:
            log.warning("%d update(s) still being handled were cancelled; Telegram will send them again",
                        len(unfinished))
        if detached:
            log.warning("%d answer(s) still waiting for their chat's flood limit were not sent", len(detached))
        notices = [*self._notices, *self._answering]
        for task in notices:
            task.cancel()
        await asyncio.gather(*notices, return_exceptions=True)
        if offset is None:
            return
        try:
            await self._application.bot.get_updates(offset=offset, timeout=0, limit=1,
                                                    allowed_updates=self._allowed)
        except TelegramError as error:
            log.warning("could not confirm the handled updates (%s); Telegram will send them again", error)


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


class PollerLock(Protocol):
    """Who may fetch updates: one replica at a time (bot.store.heartbeats.PollerLock)."""

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait until this replica may poll (True), or `stop` (False)."""

    async def watch(self, stop: asyncio.Event) -> bool:
        """Return when `stop` is set (True) or the right to poll is lost (False)."""

    async def release(self) -> None:
        """Give the right to poll back."""


async def poll_while_leader(lock: PollerLock, make_intake: Callable[[], UpdateIntake], stop: asyncio.Event) -> None:
    """Fetch updates only while this replica holds `lock`; the other replicas wait to take over.

    getUpdates from two processes at once is refused (409 Conflict) and either could confirm the
    other's updates before they are handled, so exactly one replica polls. When it dies its lock goes
    with its connection and a waiting replica starts an intake of its own: its first fetch brings
    back what the dead one had not confirmed, checked against the updates that made a job.
    """
    announced = False
    while not stop.is_set():
        if not announced:
            log.info("waiting to fetch updates (another replica may be fetching them); the worker runs meanwhile")
            announced = True
        if not await lock.acquire(stop):
            break
        log.info("this replica fetches updates now")
        term = asyncio.Event()
        intake = asyncio.create_task(make_intake().run(term))
        watching = asyncio.create_task(lock.watch(stop))
        try:
            await asyncio.wait([intake, watching], return_when=asyncio.FIRST_COMPLETED)
            term.set()  # stopping, or the lock is lost: hand back what was handled, let the next leader fetch
            await intake
        finally:
            watching.cancel()
            await asyncio.gather(watching, return_exceptions=True)
            await lock.release()
        announced = False


class LeaderPolling:
    """Long polling on whichever replica holds the poller lock (poll_while_leader), a new intake each time."""

    def __init__(self, lock: PollerLock, make_intake: Callable[[], UpdateIntake]) -> None:
        self._lock = lock
        self._make_intake = make_intake
        self._intake: UpdateIntake | None = None

    @property
    def last_turn(self) -> float:
        """Monotonic time the intake last turned (/readyz); now while this replica waits for the lock."""
        return self._intake.last_turn if self._intake is not None else time.monotonic()

    async def run(self, stop: asyncio.Event) -> None:
        """Poll while this replica leads, until `stop`."""
        await poll_while_leader(self._lock, self._new_intake, stop)

    def _new_intake(self) -> UpdateIntake:
        self._intake = self._make_intake()
        return self._intake
