"""Webhook mode's intake: updates are stored in the inbox first, then claimed and handled by any replica.

`accept` is what the webhook endpoint calls: it stores the update (once per update_id, so Telegram's
retry or the same update at two replicas is stored once) and returns only when that is committed,
so the webhook's 200 means "durable". Beyond its chat's share (CHAT_SHARE updates not yet handled)
or its sender's (SENDER_SHARE), an update is stored as dropped, and the first one of a flood as
"notice", so its chat is told once (whoever claims it sends the notice), as the long-polling intake does.
A payment is stored without its chat and sender: no share counts it, and it waits behind no other update.

`run` claims updates under a lease, at most one per chat at a time and oldest chats first (see
bot.store.inbox), and hands each to PTB's `process_update`, renewing the lease while it runs; a handled
update is marked done. A replica that dies mid-update leaves its lease to run out, and another replica (or itself, restarted
under the same WORKER_ID, at once) handles the update again; as after a crash in long polling, an
update that already made a job is not handled twice: the job's transaction marked its update handled
(bot.store.inbox.HANDLING_UPDATE), and a claim that is not the first looks that up (`already_handled`).
A button press is answered once whatever becomes of its update (bot.tg.answers): handled, failed,
skipped, given up, or dropped in a flood.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any

from telegram import Update
from telegram.ext import Application

from bot.clock import utcnow
from bot.leased import LeasedLoop
from bot.metrics import Metrics
from bot.store.db import Sessions
from bot.store.inbox import DONE, DROPPED, HANDLING_UPDATE, NOTICE, PENDING, Handling, InboxItem, InboxRepository
from bot.tg.answers import settle
from bot.tg.context import FloodNotice, lane_chat_id, never_dropped, update_sender_id
from bot.tg.flood import CHAT_SHARE, FLOOD_QUIET_S, SENDER_SHARE

log = logging.getLogger(__name__)

#: an update whose handling was started this often (each time the process died in it) is given up
MAX_ATTEMPTS = 5
#: handled updates are kept this long, so a late retry of Telegram's is still recognised
KEEP_HANDLED = timedelta(days=1)
_FORGET_EVERY_S = 600.0


class UpdateInbox:
    """Stores webhook updates durably and handles them, fairly across chats, on every replica."""

    def __init__(self, application: Application, sessions: Sessions,
                 already_handled: Callable[[int], Awaitable[bool]], *, owner: str, lease: timedelta,
                 grace: float, concurrency: int = 16, idle: float = 0.5, metrics: Metrics | None = None,
                 flood_notice: FloodNotice | None = None, clock: Callable[[], datetime] = utcnow) -> None:
        self._application = application
        self._sessions = sessions
        self._already_handled = already_handled
        self._owner = owner
        self._lease = lease
        self._grace = grace
        self._metrics = metrics or Metrics()
        self._flood_notice = flood_notice
        self._clock = clock
        self._answering: set[asyncio.Task[None]] = set()  # answers to presses dropped in a flood
        self._forgotten_at = 0.0
        # a finished update wakes the loop: its chat's next update may start now; a lease is renewed three
        # times a lease while its update is handled, so a slow handler (a long wait on a chat's flood limit,
        # a large upload) is never taken for a dead replica's and handled again, nor its chat's next update
        # started beside it
        self._loop: LeasedLoop[InboxItem] = LeasedLoop(
            claim=self._claim, handle=self._handle, release=self._release_own, capacity=concurrency, idle=idle,
            grace=grace, noun="update", wake_on_done=True, renew=self._renew,
            renew_every=lambda item: lease.total_seconds() / 3)

    # ---- storing (the webhook) ------------------------------------------------------------------

    async def accept(self, payload: dict[str, Any]) -> None:
        """Store an update durably (once per update_id); returns once it is committed."""
        update_id = payload["update_id"]
        update = Update.de_json(payload, self._application.bot)
        chat_id = lane_chat_id(update)
        sender_id = update_sender_id(update)
        if never_dropped(update):
            # counted in no share and a lane of its own: claimed at once, however busy its chat or sender
            chat_id = sender_id = None
        now = self._clock()
        async with self._sessions() as session, session.begin():
            inbox = InboxRepository(session)
            chat_held, sender_held = await inbox.held(chat_id=chat_id, sender_id=sender_id)
            state = PENDING
            if chat_held >= CHAT_SHARE or sender_held >= SENDER_SHARE:
                quiet_since = now - timedelta(seconds=FLOOD_QUIET_S)
                told = chat_id is None or await inbox.dropped_since(chat_id, quiet_since)
                state = DROPPED if told else NOTICE
            stored = await inbox.add(update_id, payload, chat_id=chat_id, sender_id=sender_id, state=state, now=now)
        outcome = state if stored else "duplicate"
        self._metrics.updates.labels("webhook", outcome).inc()
        if not stored:
            log.info("update %s arrived again; it is stored already", update_id)
        elif state == PENDING:
            self._loop.wake()
        else:
            log.warning("chat %s is flooding the bot: update %s dropped", chat_id, update_id)
            if state == NOTICE:
                self._loop.wake()  # whoever claims it sends the notice, and answers the press
            elif update.callback_query is not None:
                # never claimed: its press is answered here, without holding up the webhook's answer
                task = asyncio.create_task(settle(self._application, update))
                self._answering.add(task)
                task.add_done_callback(self._answering.discard)

    # ---- handling -------------------------------------------------------------------------------

    @property
    def last_turn(self) -> float:
        """Monotonic time the loop last turned (/readyz)."""
        return self._loop.last_turn

    async def run(self, stop: asyncio.Event) -> None:
        """Claim and handle updates until `stop`; then let handlers finish (bounded) and release the rest."""
        await self._loop.run(stop)
        if self._answering:
            await asyncio.wait(list(self._answering), timeout=self._grace)

    async def _claim(self, limit: int) -> list[InboxItem]:
        await self._forget_old()
        async with self._sessions() as session, session.begin():
            return await InboxRepository(session).claim(owner=self._owner, now=self._clock(), lease_for=self._lease,
                                                        limit=limit)

    async def _handle(self, item: InboxItem) -> None:
        final = DONE
        HANDLING_UPDATE.set(Handling(item.update_id))  # this task's own context: a job its handler stores marks it
        update: Update | None = None
        try:
            update = Update.de_json(item.payload, self._application.bot)
            if item.state == NOTICE:
                final = DROPPED  # stays a dropped update, so the chat's flood is still known as told
                if self._flood_notice is not None:
                    await self._flood_notice(update)
            elif item.attempts > MAX_ATTEMPTS:
                log.error("update %s: handling it was started %d times without finishing; giving it up",
                          item.update_id, item.attempts - 1)
            elif item.attempts > 1 and await self._made_a_job(item.update_id):
                log.info("update %s already made a job before a crash; not handling it again", item.update_id)
            else:
                await self._application.process_update(update)
        except asyncio.CancelledError:
            raise  # shutting down: the update stays pending (its lease is released) for the next claim
        except Exception:  # PTB's error handler saw handler errors already; this is a last resort
            log.exception("update %s could not be handled", item.update_id)
        if update is not None:
            await settle(self._application, update)  # a press nothing answered: skipped, given up, or failed
        try:
            async with self._sessions() as session, session.begin():
                await InboxRepository(session).finish(item.update_id, owner=self._owner, now=self._clock(),
                                                      state=final)
        except Exception:  # handled, but not recorded: it may be handled again after its lease
            log.exception("could not record update %s as handled", item.update_id)

    async def _renew(self, item: InboxItem) -> bool:
        async with self._sessions() as session, session.begin():
            return await InboxRepository(session).renew(item.update_id, owner=self._owner,
                                                        until=self._clock() + self._lease)

    async def _made_a_job(self, update_id: int) -> bool:
        try:
            return await self._already_handled(update_id)
        except Exception:  # handling it again beats dropping it
            log.exception("could not check update %s against the handled ones", update_id)
            return False

    async def _release_own(self) -> int:
        async with self._sessions() as session, session.begin():
            return await InboxRepository(session).release_all(owner=self._owner)

    async def _forget_old(self) -> None:
        if time.monotonic() - self._forgotten_at < _FORGET_EVERY_S:
            return
        self._forgotten_at = time.monotonic()
        try:
            async with self._sessions() as session, session.begin():
                await InboxRepository(session).forget(before=self._clock() - KEEP_HANDLED)
        except Exception:
            log.warning("could not forget old updates", exc_info=True)
