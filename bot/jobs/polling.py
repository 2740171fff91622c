"""When to ask the service about a running task next.

Task durations are heavy-tailed (roughly log-normal: most tasks finish near a typical time, a few
take many times longer), and every status check costs a request. So, per operation, the schedule
learns the duration distribution from finished tasks and then:

1. holds the first check until about 15% of tasks are done (earlier checks mostly find nothing);
2. checks every `notice_interval` (2.1 s; a fifth of the median for slow operations) while nearly
   every task finishes, which bounds the delay between completion and notice;
3. past the 98th percentile spaces checks at a tenth of the task's age: the few very slow tasks wait
   a few percent longer, for far fewer requests.

Against fixed 2-second polling (the provider SDK's default) this saves the checks before the first
plausible finish and those in the long tail, for the same delay to notice nearly every task; see
bench/README.md for the measured trade-off. The distribution is summarised as a log-normal fitted to
the median and 90th percentile of recent durations (which the first-check cut-off barely touches),
shrunk towards a prior (the operation's typical duration, wide spread) while the history is short.
`fixed()` gives the SDK's policy, kept as the baseline the benchmark compares against.

Every delay is multiplied by `time_scale` and every recorded age divided by it, so a benchmark can
run the same policy against a sandbox whose tasks are ten times faster and report unscaled seconds.
The schedule keeps a few hundred numbers per operation and nothing per job.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from statistics import NormalDist

_UNIT_NORMAL = NormalDist()
#: z-scores of the quantiles the fit uses
_Z90 = _UNIT_NORMAL.inv_cdf(0.9)


@dataclass(frozen=True)
class DurationModel:
    """A log-normal summary of one operation's task durations, in unscaled seconds."""

    mu: float
    sigma: float

    @property
    def median(self) -> float:
        """The median duration."""
        return math.exp(self.mu)

    def quantile(self, q: float) -> float:
        """The duration that a share `q` of tasks finish within."""
        return math.exp(self.mu + self.sigma * _UNIT_NORMAL.inv_cdf(q))


@dataclass
class PollSchedule:
    """Learns task durations per operation and places status checks around them."""

    #: the first check comes when this share of tasks is expected to be done
    first_quantile: float = 0.15
    #: while most tasks finish, checks come every `notice_interval` seconds, or this share of the
    #: median duration when that is longer (slow operations need not be watched as closely)...
    notice_interval: float = 2.1
    dense_share: float = 0.2
    #: ... until this share of tasks is expected to be done
    dense_until: float = 0.98
    #: after that, the next check waits this share of the task's age
    tail_share: float = 0.1
    min_interval: float = 1.0
    max_interval: float = 60.0
    #: spread assumed (log-space standard deviation) until an operation has enough history
    prior_sigma: float = 1.0
    #: how many finished tasks the prior counts as: a few early (and so mostly short) tasks only nudge it
    prior_weight: int = 30
    min_samples: int = 5
    window: int = 200
    #: relative random spread of each delay, so checks of tasks started together drift apart
    jitter: float = 0.03
    #: every delay is multiplied by this (and recorded ages divided by it); 1 outside benchmarks
    time_scale: float = 1.0
    #: when set, the fixed policy: a check every so many (unscaled) seconds, nothing learned
    fixed_interval: float | None = None
    rng: random.Random = field(default_factory=random.Random)
    _durations: dict[str, deque[float]] = field(default_factory=dict, repr=False)
    _finished: dict[str, int] = field(default_factory=dict, repr=False)
    _typical: dict[str, float] = field(default_factory=dict, repr=False)
    _models: dict[str, DurationModel] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError("time_scale must be positive")
        if self.fixed_interval is not None and self.fixed_interval <= 0:
            raise ValueError("a fixed poll interval must be positive")
        if not 0 < self.first_quantile < self.dense_until < 1:
            raise ValueError("need 0 < first_quantile < dense_until < 1")

    @classmethod
    def fixed(cls, seconds: float, *, time_scale: float = 1.0) -> PollSchedule:
        """A check every `seconds`, the first one `seconds` after submission (the provider SDK polls every 2 s)."""
        return cls(fixed_interval=seconds, time_scale=time_scale, jitter=0.0)

    @classmethod
    def for_policy(cls, policy: str, *, time_scale: float = 1.0) -> PollSchedule:
        """The schedule a setting names: "adaptive", or "fixed:<seconds>" (e.g. "fixed:2")."""
        name, _, argument = policy.strip().lower().partition(":")
        if name == "adaptive" and not argument:
            return cls(time_scale=time_scale)
        if name == "fixed":
            try:
                seconds = float(argument)
            except ValueError:
                seconds = 0.0
            if seconds > 0:
                return cls.fixed(seconds, time_scale=time_scale)
        raise ValueError(f"unknown poll policy {policy!r}: use 'adaptive' or 'fixed:<seconds>'")

    # ---- learning ---------------------------------------------------------------------------------

    def record(self, operation: str, seconds: float) -> None:
        """Remember a finished task: `seconds` from submission to the check that saw it done."""
        if self.fixed_interval is not None:
            return
        age = max(0.0, seconds) / self.time_scale
        # the task finished somewhere in the gap before this check: take its middle
        duration = max(0.0, age - self._gap_before(operation, age) / 2)
        samples = self._durations.setdefault(operation, deque(maxlen=self.window))
        samples.append(duration)
        self._finished[operation] = self._finished.get(operation, 0) + 1
        self._models.pop(operation, None)

    def model(self, operation: str) -> DurationModel:
        """The current duration model of an operation (the prior until it has enough history)."""
        cached = self._models.get(operation)
        if cached is not None:
            return cached
        prior = DurationModel(math.log(max(self._typical.get(operation, 10.0), 0.1)), self.prior_sigma)
        samples = self._durations.get(operation)
        if samples is None or len(samples) < self.min_samples:
            return prior
        ordered = sorted(samples)
        median = max(_quantile(ordered, 0.5), 0.1)
        upper = max(_quantile(ordered, 0.9), median)
        sigma = min(2.0, max(0.2, math.log(upper / median) / _Z90))
        # the prior fades as tasks finish (not just as the window fills), so a wrong typical duration
        # stops mattering once the operation has real history
        finished = self._finished.get(operation, len(ordered))
        weight = finished / (finished + self.prior_weight)
        fitted = DurationModel(weight * math.log(median) + (1 - weight) * prior.mu,
                               weight * sigma + (1 - weight) * prior.sigma)
        self._models[operation] = fitted
        return fitted

    # ---- scheduling -------------------------------------------------------------------------------

    def first_delay(self, operation: str, typical_seconds: float) -> float:
        """Seconds from submission to the first status check."""
        self._typical.setdefault(operation, typical_seconds)
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        first = max(self.min_interval, self.model(operation).quantile(self.first_quantile))
        return self._jittered(first) * self.time_scale

    def next_delay(self, operation: str, age_seconds: float) -> float:
        """Seconds until the next check of a task that has been running `age_seconds`."""
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        interval = self._interval_at(operation, max(0.0, age_seconds) / self.time_scale)
        return self._jittered(interval) * self.time_scale

    def _dense_interval(self, model: DurationModel) -> float:
        return min(self.max_interval, max(self.min_interval, self.notice_interval, self.dense_share * model.median))

    def _interval_at(self, operation: str, age: float) -> float:
        """The unscaled gap after a check at `age`."""
        model = self.model(operation)
        dense = self._dense_interval(model)
        if age < model.quantile(self.dense_until):
            return dense
        return min(self.max_interval, max(dense, self.tail_share * age))

    def _gap_before(self, operation: str, age: float) -> float:
        """The unscaled gap that ended with a check at `age` (none before the first check)."""
        model = self.model(operation)
        first = max(self.min_interval, model.quantile(self.first_quantile))
        if age <= first * (1 + self.jitter):
            return 0.0
        if age < model.quantile(self.dense_until) + self._dense_interval(model):
            return self._dense_interval(model)
        # the previous check was at age / (1 + tail_share) when the gap grows with age
        return min(self.max_interval, age - age / (1 + self.tail_share))

    def _jittered(self, seconds: float) -> float:
        if not self.jitter:
            return seconds
        return seconds * self.rng.uniform(1 - self.jitter, 1 + self.jitter)

    @staticmethod
    def backoff(attempt: int, *, base: float = 2.0, cap: float = 60.0, retry_after: float | None = None,
                rng: random.Random | None = None) -> float:
        """Full-jitter exponential backoff, never shorter than a server's retry_after."""
        delay = (rng or random).uniform(0, min(cap, base * math.pow(2, max(0, attempt - 1))))
        return max(delay, retry_after or 0.0)


def _quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated between neighbours."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
