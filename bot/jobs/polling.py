"""When to ask the service about a running task next.

Task durations are heavy-tailed: most finish near a typical time, a few take many times longer. So
the first check waits for a good part of the typical duration (learned per operation), checks come
often around the time most tasks finish, and then thin out as a task grows old, bounded so that the
delay between completion and notice stays small.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict, deque
from dataclasses import dataclass, field


@dataclass
class PollSchedule:
    """Learns task durations per operation and places status checks around them."""

    min_interval: float = 1.0
    max_interval: float = 4.0
    #: the first check waits this share of the learned lower quantile of durations
    first_share: float = 0.8
    window: int = 200
    rng: random.Random = field(default_factory=random.Random)
    _durations: dict[str, deque[float]] = field(default_factory=lambda: defaultdict(deque))

    def record(self, operation: str, seconds: float) -> None:
        """Remember how long a finished task took (time from submission to the check that saw it done)."""
        samples = self._durations[operation]
        samples.append(max(0.0, seconds))
        if len(samples) > self.window:
            samples.popleft()

    def _quantile(self, operation: str, q: float) -> float | None:
        samples = self._durations.get(operation)
        if not samples or len(samples) < 5:
            return None
        ordered = sorted(samples)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    def first_delay(self, operation: str, typical_seconds: float) -> float:
        """Seconds from submission to the first status check."""
        low = self._quantile(operation, 0.1)
        base = low if low is not None else typical_seconds * 0.3
        return max(self.min_interval, base * self.first_share)

    def next_delay(self, operation: str, age_seconds: float) -> float:
        """Seconds until the next check of a task that has been running `age_seconds`."""
        # grow with age (old tasks are slow tasks), but never beyond max_interval
        interval = self.min_interval + 0.05 * max(0.0, age_seconds)
        interval = min(self.max_interval, interval)
        return interval * self.rng.uniform(0.9, 1.1)

    @staticmethod
    def backoff(attempt: int, *, base: float = 2.0, cap: float = 60.0, retry_after: float | None = None,
                rng: random.Random | None = None) -> float:
        """Full-jitter exponential backoff, never shorter than a server's retry_after."""
        delay = (rng or random).uniform(0, min(cap, base * math.pow(2, max(0, attempt - 1))))
        return max(delay, retry_after or 0.0)
