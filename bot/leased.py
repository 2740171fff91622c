"""One loop for work taken under a lease: claim, handle, renew, sleep until due or woken, drain, release.

The job worker (bot.jobs.worker) and the webhook's update inbox (bot.tg.inbox) both run on it, and it
knows nothing of jobs or updates: each plugs in how to claim up to n items, handle one, and release
every lease this process holds (and, if it has them, how to renew one item's lease and when the next
item falls due), as arq's worker takes its jobs' coroutines. The loop keeps at most `capacity` items
in hand and claims again as they finish, so one slow item never holds up the others. On stop, items
in hand get `grace` seconds to finish; the rest are cancelled and every lease is released, so
another process (or this one, restarted) takes them at once instead of after their lease runs out.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class LeasedLoop(Generic[T]):
    """Runs claimed items concurrently up to a capacity, and gives every lease back when it stops."""

    def __init__(self, *, claim: Callable[[int], Awaitable[Sequence[T]]], handle: Callable[[T], Awaitable[None]],
                 release: Callable[[], Awaitable[int]], capacity: int, idle: float, grace: float, noun: str,
                 until_due: Callable[[], Awaitable[float | None]] | None = None,
                 renew: Callable[[T], Awaitable[bool]] | None = None,
                 renew_every: Callable[[T], float] | None = None, wake_on_done: bool = False,
                 wake: asyncio.Event | None = None) -> None:
        self._claim = claim
        self._handle = handle
        self._release = release
        self._capacity = capacity
        self._idle = idle
        self._grace = grace
        self._noun = noun
        self._until_due = until_due
        self._renew = renew
        self._renew_every = renew_every
        #: True: every finished item wakes the loop (its successor may be waiting for it), not only one that frees a full loop
        self._wake_on_done = wake_on_done
        #: set (by `wake()`, or by whoever was given it) when new work was stored
        self._wake = wake or asyncio.Event()
        self._in_hand: set[asyncio.Task[None]] = set()
        #: monotonic time the loop last turned (/readyz)
        self.last_turn = time.monotonic()

    def wake(self) -> None:
        """Claim now (new work was just stored)."""
        self._wake.set()

    async def once(self, limit: int) -> int:
        """Claim up to `limit` items, handle them all, and wait for them (tests use it)."""
        items = await self._claim(limit)
        await asyncio.gather(*(self._run(item) for item in items))
        return len(items)

    async def run(self, stop: asyncio.Event) -> None:
        """Work until `stop` is set, then drain within the grace."""
        await self._released()
        while not stop.is_set():
            self.last_turn = time.monotonic()
            free = self._capacity - len(self._in_hand)
            if free > 0:
                for item in await self._claimed(free):
                    task = asyncio.create_task(self._run(item))
                    self._in_hand.add(task)
                    task.add_done_callback(self._done)
            # a claim that took fewer items than it could left nothing due; one that filled the
            # capacity waits for an item to finish either way
            await self._sleep(stop)
        await self.drain(self._grace)

    async def drain(self, timeout: float) -> None:
        """Wait (at most `timeout` seconds) for the items in hand, cancel the rest, then release every lease held."""
        if self._in_hand:
            _, pending = await asyncio.wait(set(self._in_hand), timeout=timeout)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
            if pending:
                log.warning("%d %s(s) still in hand were cancelled; their leases are released", len(pending),
                            self._noun)
        try:
            await self._released()
        except Exception:
            log.warning("could not release %s leases; they run out by themselves", self._noun, exc_info=True)

    async def _released(self) -> None:
        released = await self._release()
        if released:
            log.info("released %d %s lease(s) held by this process", released, self._noun)

    async def _claimed(self, limit: int) -> Sequence[T]:
        try:
            return await self._claim(limit)
        except Exception:  # a database hiccup must not end the loop
            log.exception("claiming %ss failed; retrying shortly", self._noun)
            return []

    def _done(self, task: asyncio.Task[None]) -> None:
        was_full = len(self._in_hand) >= self._capacity
        self._in_hand.discard(task)
        if was_full or self._wake_on_done:
            # Below capacity the loop already sleeps only until the next item is due (at most `idle`), and
            # a claim on every finished item would take the database's write lock far more often.
            self._wake.set()

    async def _sleep(self, stop: asyncio.Event) -> None:
        """Sleep until woken, stopped, or the next item falls due (at most `idle`)."""
        delay = self._idle
        if self._until_due is not None and len(self._in_hand) < self._capacity:
            try:
                due = await self._until_due()
            except Exception:  # sleep the idle time instead
                log.warning("could not look up when the next %s is due", self._noun, exc_info=True)
                due = None
            if due is not None:
                delay = min(delay, max(0.0, due))
        waiters = [asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(stop.wait())]
        try:
            await asyncio.wait(waiters, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()
        self._wake.clear()

    async def _run(self, item: T) -> None:
        renewing = None
        if self._renew is not None and self._renew_every is not None:
            renewing = asyncio.create_task(self._keep_leased(item, self._renew, self._renew_every(item)))
        try:
            await self._handle(item)
        except Exception:
            # its lease runs out and it is taken again; a bug must not end the loop
            log.exception("%s %s: unexpected error", self._noun, item)
        finally:
            if renewing is not None:
                renewing.cancel()

    async def _keep_leased(self, item: T, renew: Callable[[T], Awaitable[bool]], every: float) -> None:
        """Renew an item's lease while it is handled, until it is let go of or lost."""
        while True:
            await asyncio.sleep(every)
            try:
                if not await renew(item):
                    return
            except Exception:  # the next round tries again; a lease lasts several rounds
                log.warning("%s %s: could not renew its lease", self._noun, item, exc_info=True)
