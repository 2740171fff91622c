"""The one backoff: full jitter under an exponential cap, never shorter than the other side asked for.

Full jitter (a uniform wait up to `min(cap, base · 2^(attempt-1))`) spreads the retries of many
callers that failed together. A Retry-After (the service's 429, Telegram's retry_after) is a floor,
never cut short: retrying earlier only draws another refusal. A caller that cannot wait that long
where it stands (the service client retries inside a call, whose caller waits) gives up instead, and
its caller reschedules the work for after that time (the worker does, for every step).
"""

from __future__ import annotations

import random


def full_jitter(attempt: int, *, base: float, cap: float, rng: random.Random,
                retry_after: float | None = None) -> float:
    """Seconds to wait after failed try number `attempt` (1-based), at least `retry_after`."""
    # the exponent is bounded so a huge attempt number cannot overflow a float
    ceiling = min(cap, base * 2.0 ** min(max(attempt - 1, 0), 60))
    return max(rng.uniform(0.0, ceiling), retry_after or 0.0)
