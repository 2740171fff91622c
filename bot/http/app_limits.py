"""A per-person request budget for the Mini App's API: a token bucket each, kept in this process's memory.

A page opening "My results" asks for a few dozen pictures at once, so the bucket is deep; a script hammering
the API is slowed to the refill rate. Jobs have their own limits besides (active jobs, credits).
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

#: requests a person may make at once, and per second after that
BURST = 60
RATE_PER_S = 2.0
#: people remembered before the oldest buckets are forgotten (a forgotten one starts full again)
MEMORY = 10_000


class RequestBudget:
    """Token buckets by user id."""

    def __init__(self, burst: int = BURST, rate: float = RATE_PER_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._burst, self._rate, self._clock = burst, rate, clock
        self._buckets: OrderedDict[int, tuple[float, float]] = OrderedDict()

    def take(self, user_id: int) -> bool:
        """Spend one request of `user_id`'s budget; False when it is empty."""
        now = self._clock()
        tokens, then = self._buckets.pop(user_id, (float(self._burst), now))
        tokens = min(float(self._burst), tokens + (now - then) * self._rate)
        allowed = tokens >= 1.0
        self._buckets[user_id] = (tokens - 1.0 if allowed else tokens, now)
        if len(self._buckets) > MEMORY:
            self._buckets.popitem(last=False)
        return allowed
