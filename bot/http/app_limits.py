"""Per-person bounds of the Mini App's API, kept in this process's memory: a request budget and large requests in flight.

A page opening "My results" asks for a few dozen pictures at once, so the budget is deep; a script hammering
the API is slowed to the refill rate. A request costs what it makes the bot do: a paint request (a mask to
read, decode and store, a photo to download) costs ten plain reads, so a burst of them is refused long before
it costs much. Requests that hold megabytes (a photo download, a mask body) also take a slot while they run,
at most `PER_PERSON` of one person's and `PER_PROCESS` of everyone's at once; the others wait, in order,
holding nothing but their connection (their bodies are read only once they have a slot), and give up with
`Busy` after `WAIT_S`. Jobs have their own limits besides (active jobs, credits).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable

#: requests a person may make at once, and per second after that (in plain reads)
BURST = 60
RATE_PER_S = 2.0
#: people remembered before the oldest buckets are forgotten (a forgotten one starts full again)
MEMORY = 10_000
#: large requests running at once: one person's, and everyone's (each holds up to ~60 MB: a 20 MB photo as
#: downloaded and as sent, or an 8 MB mask body, its text and its bytes; see bench/perf/hostile.py)
PER_PERSON = 2
PER_PROCESS = 3
#: seconds a large request waits for its slots before it is answered "busy"
WAIT_S = 20.0


class RequestBudget:
    """Token buckets by user id."""

    def __init__(self, burst: int = BURST, rate: float = RATE_PER_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._burst, self._rate, self._clock = burst, rate, clock
        self._buckets: OrderedDict[int, tuple[float, float]] = OrderedDict()

    def take(self, user_id: int, cost: int = 1) -> bool:
        """Spend `cost` requests of `user_id`'s budget; False (and nothing spent) when there are not that many."""
        now = self._clock()
        tokens, then = self._buckets.pop(user_id, (float(self._burst), now))
        tokens = min(float(self._burst), tokens + (now - then) * self._rate)
        allowed = tokens >= cost
        self._buckets[user_id] = (tokens - cost if allowed else tokens, now)
        if len(self._buckets) > MEMORY:
            self._buckets.popitem(last=False)
        return allowed


class Busy(Exception):
    """No slot for a large request came free in time."""


class LargeRequests:
    """Slots for requests that hold megabytes: a few per person, a few per process, waited for in order."""

    def __init__(self, per_person: int = PER_PERSON, per_process: int = PER_PROCESS, wait_s: float = WAIT_S) -> None:
        self._per_person, self._wait_s = per_person, wait_s
        self._process = asyncio.Semaphore(per_process)
        #: user id -> (their semaphore, requests holding or waiting for it); dropped when none are left
        self._people: dict[int, tuple[asyncio.Semaphore, int]] = {}
        self._running = 0

    @property
    def running(self) -> int:
        """Large requests holding their slots now."""
        return self._running

    @contextlib.asynccontextmanager
    async def slot(self, user_id: int) -> AsyncIterator[None]:
        """Hold one of the person's slots and one of the process's while the block runs; `Busy` after WAIT_S."""
        semaphore, users = self._people.get(user_id, (asyncio.Semaphore(self._per_person), 0))
        self._people[user_id] = (semaphore, users + 1)  # counted until released, so the semaphore outlives its holders
        try:
            try:
                async with asyncio.timeout(self._wait_s):
                    await semaphore.acquire()
                    try:
                        await self._process.acquire()
                    except BaseException:
                        semaphore.release()
                        raise
            except TimeoutError:
                raise Busy() from None
            self._running += 1
            try:
                yield
            finally:
                self._running -= 1
                self._process.release()
                semaphore.release()
        finally:
            semaphore, users = self._people[user_id]
            if users <= 1:
                del self._people[user_id]
            else:
                self._people[user_id] = (semaphore, users - 1)
