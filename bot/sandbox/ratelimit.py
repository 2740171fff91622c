"""A token bucket over all /v1 requests."""

from __future__ import annotations

import math
import time
from collections.abc import Callable


class TokenBucket:
    """rate tokens a second, holding at most burst = max(1, rate); each request takes one."""

    def __init__(self, rate_per_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate_per_s
        self.burst = max(1.0, rate_per_s)
        self._clock = clock
        self._tokens = self.burst
        self._refilled_at = clock()

    def take(self) -> float | None:
        """Take a token: None when granted, else the seconds until one is available."""
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._refilled_at) * self.rate)
        self._refilled_at = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return None
        return (1.0 - self._tokens) / self.rate


def retry_after_header(wait_s: float) -> str:
    """A Retry-After value in whole seconds, at least 1."""
    return str(max(1, math.ceil(wait_s)))
