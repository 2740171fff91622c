"""When to ask the service about a running task next.

Task durations are heavy-tailed over all requests, but much of that spread is explained: each
operation has its own pace, and a task's time grows with its input's size (pixels). Every status
check costs a request, so the schedule learns, per operation, how durations depend on the input
and places checks where the task in hand is likely to finish:

1. The duration model of an operation is a log-log regression of recent durations on input
   megapixels (log duration = a + b·log megapixels + noise); the residual spread is the noise. For
   one input size that gives a log-normal: the task's conditional distribution. Tasks of unknown
   size use the operation's overall distribution. Until an operation has history, and fading as it
   gets some, a prior holds: its typical duration, a wide spread and no size dependence.
2. Checks are dense (every `notice_interval`, 2 s) only where the conditional hazard, the chance
   per second that a still-running task finishes now, is at least `dense_hazard`; elsewhere a check
   rarely finds anything, and the few tasks finishing there wait longer. The first check comes one
   interval after the dense window opens, so a task finishing at its opening is still noticed within
   the interval. The window closes at the conditional `dense_until` quantile at the latest.
3. Past the window checks come at a tenth of the task's age (at least the dense interval).

So the p95 delay to notice is spent where it buys most: on the early and late edges of each task's
conditional distribution and on the slowest classes of task, while the bulk of tasks is noticed
within 2 s. See bench/README.md for the measured trade-off against fixed 2 s and 5 s polling.
`fixed()` gives the provider SDK's policy, kept as the baseline the benchmark compares against.

Every delay is multiplied by `time_scale` and every recorded age divided by it, so a benchmark can
run the same policy against a sandbox whose tasks are ten times faster and report unscaled seconds.
The schedule keeps a few hundred (size, duration) pairs per operation and nothing per job: the
worker hands the input's pixel count with every call.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist

_UNIT_NORMAL = NormalDist()
#: z-scores where the hazard window is looked for (a task's own distribution, in standard units)
_Z_GRID = tuple(-4.0 + 0.02 * step for step in range(426))


@dataclass(frozen=True)
class DurationModel:
    """A log-normal summary of task durations (of one operation and input size), in unscaled seconds."""

    mu: float
    sigma: float

    @property
    def median(self) -> float:
        """The median duration."""
        return math.exp(self.mu)

    def quantile(self, q: float) -> float:
        """The duration that a share `q` of tasks finish within."""
        return math.exp(self.mu + self.sigma * _UNIT_NORMAL.inv_cdf(q))

    def hazard_window(self, hazard: float) -> tuple[float, float] | None:
        """The ages at which a still-running task finishes at a rate of at least `hazard` per second."""
        window = _standard_window(round(self.sigma, 2), round(math.log(hazard * self.median), 2))
        if window is None:
            return None
        return math.exp(self.mu + self.sigma * window[0]), math.exp(self.mu + self.sigma * window[1])


@lru_cache(maxsize=4096)
def _standard_window(sigma: float, log_scaled_hazard: float) -> tuple[float, float] | None:
    """The z range where median × hazard of a log-normal with this sigma reaches the threshold.

    The hazard at z is φ(z) / (σ·t·(1 − Φ(z))) with t = median·e^(σz), so median × hazard depends
    on z and σ alone: one scale-free table serves every operation and size.
    """
    threshold = math.exp(log_scaled_hazard)
    inside = [z for z in _Z_GRID
              if _UNIT_NORMAL.pdf(z) >= threshold * sigma * math.exp(sigma * z) * max(1e-300, 1 - _UNIT_NORMAL.cdf(z))]
    return (inside[0], inside[-1]) if inside else None


@dataclass(frozen=True)
class _Fit:
    """One operation's regression: log duration = intercept + slope × log megapixels, and its spread."""

    intercept: float
    slope: float
    sigma: float
    #: mean log megapixels of the samples, and the spread of log durations when the size is unknown
    mean_x: float
    overall_sigma: float
    #: how much the data counts against the prior (0..1)
    weight: float


@dataclass
class PollSchedule:
    """Learns task durations per operation and input size, and places status checks around them."""

    #: while a task is likely to finish (see dense_hazard), checks come every `notice_interval` seconds
    notice_interval: float = 2.0
    #: the least chance per second that a running task finishes now for checks to be dense
    dense_hazard: float = 0.035
    #: ... and the dense window ends by this share of tasks (of that operation and size) done
    dense_until: float = 0.98
    #: when a task's hazard never reaches dense_hazard (a very slow one), the first check comes
    #: when this share of such tasks is done
    first_quantile: float = 0.05
    #: after the window, the next check waits this share of the task's age
    tail_share: float = 0.1
    min_interval: float = 1.0
    max_interval: float = 60.0
    #: spread assumed (log-space standard deviation) until an operation has history
    prior_sigma: float = 1.0
    #: how many finished tasks the prior counts as: the first (and so mostly short) tasks only nudge it
    prior_weight: int = 3
    min_samples: int = 5
    window: int = 300
    #: how strongly the size slope is held at 0 (no size dependence) before the data shows one
    slope_ridge: float = 1.0
    #: relative random spread of each delay, so checks of tasks started together drift apart
    jitter: float = 0.03
    #: every delay is multiplied by this (and recorded ages divided by it); 1 outside benchmarks
    time_scale: float = 1.0
    #: when set, the fixed policy: a check every so many (unscaled) seconds, nothing learned
    fixed_interval: float | None = None
    rng: random.Random = field(default_factory=random.Random)
    _samples: dict[str, deque[tuple[float | None, float]]] = field(default_factory=dict, repr=False)
    _finished: dict[str, int] = field(default_factory=dict, repr=False)
    _typical: dict[str, float] = field(default_factory=dict, repr=False)
    _fits: dict[str, _Fit | None] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.time_scale <= 0:
            raise ValueError("time_scale must be positive")
        if self.fixed_interval is not None and self.fixed_interval <= 0:
            raise ValueError("a fixed poll interval must be positive")
        if not 0 < self.first_quantile < self.dense_until < 1:
            raise ValueError("need 0 < first_quantile < dense_until < 1")
        if self.dense_hazard <= 0 or self.notice_interval <= 0:
            raise ValueError("dense_hazard and notice_interval must be positive")

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

    def record(self, operation: str, seconds: float, input_pixels: int | None = None) -> None:
        """Remember a finished task: `seconds` from submission to the check that saw it done."""
        if self.fixed_interval is not None:
            return
        age = max(0.0, seconds) / self.time_scale
        # the task finished somewhere in the gap before this check: take its middle
        duration = max(0.05, age - self._gap_before(self.model(operation, input_pixels), age) / 2)
        samples = self._samples.setdefault(operation, deque(maxlen=self.window))
        samples.append((_log_megapixels(input_pixels), math.log(duration)))
        self._finished[operation] = self._finished.get(operation, 0) + 1
        self._fits.pop(operation, None)

    def model(self, operation: str, input_pixels: int | None = None) -> DurationModel:
        """The duration model of an operation's tasks with an input of this size (None: any size)."""
        prior_mu = math.log(max(self._typical.get(operation, 10.0), 0.1))
        fit = self._fit(operation)
        if fit is None:
            return DurationModel(prior_mu, self.prior_sigma)
        x = _log_megapixels(input_pixels)
        if x is None:
            mu, sigma = fit.intercept + fit.slope * fit.mean_x, fit.overall_sigma
        else:
            mu, sigma = fit.intercept + fit.slope * x, fit.sigma
        # the prior fades as tasks finish, so a wrong typical duration stops mattering once the
        # operation has real history
        return DurationModel(fit.weight * mu + (1 - fit.weight) * prior_mu,
                             fit.weight * sigma + (1 - fit.weight) * self.prior_sigma)

    def _fit(self, operation: str) -> _Fit | None:
        if operation in self._fits:
            return self._fits[operation]
        samples = self._samples.get(operation)
        fit = None
        if samples is not None and len(samples) >= self.min_samples:
            fit = self._regress(list(samples), self._finished.get(operation, len(samples)))
        self._fits[operation] = fit
        return fit

    def _regress(self, samples: list[tuple[float | None, float]], finished: int) -> _Fit:
        """Least squares of log duration on log megapixels, the slope shrunk towards 0 (ridge)."""
        ys = [y for _, y in samples]
        mean_y = sum(ys) / len(ys)
        overall = _spread([y - mean_y for y in ys])
        sized = [(x, y) for x, y in samples if x is not None]
        slope, mean_x, intercept = 0.0, 0.0, mean_y
        if len(sized) >= self.min_samples:
            mean_x = sum(x for x, _ in sized) / len(sized)
            sized_mean_y = sum(y for _, y in sized) / len(sized)
            sxx = sum((x - mean_x) ** 2 for x, _ in sized)
            sxy = sum((x - mean_x) * (y - sized_mean_y) for x, y in sized)
            slope = min(2.0, max(-1.0, sxy / (sxx + self.slope_ridge)))
            intercept = sized_mean_y - slope * mean_x
            residuals = [y - intercept - slope * x for x, y in sized]
            sigma = _spread(residuals)
        else:
            sigma = overall
        return _Fit(intercept=intercept, slope=slope, sigma=sigma, mean_x=mean_x, overall_sigma=overall,
                    weight=finished / (finished + self.prior_weight))

    # ---- scheduling -------------------------------------------------------------------------------

    def first_delay(self, operation: str, typical_seconds: float, input_pixels: int | None = None) -> float:
        """Seconds from submission to the first status check of a task with an input of `input_pixels`."""
        self._typical.setdefault(operation, typical_seconds)
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        first = self._first_check(self.model(operation, input_pixels))
        return self._jittered(first) * self.time_scale

    def next_delay(self, operation: str, age_seconds: float, input_pixels: int | None = None) -> float:
        """Seconds until the next check of a task that has been running `age_seconds`."""
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        model = self.model(operation, input_pixels)
        interval = self._interval_at(model, max(0.0, age_seconds) / self.time_scale)
        return self._jittered(interval) * self.time_scale

    def _window(self, model: DurationModel) -> tuple[float, float] | None:
        """The (unscaled) ages between which checks are dense, or None when they never are."""
        window = model.hazard_window(self.dense_hazard)
        if window is None:
            return None
        return window[0], min(window[1], model.quantile(self.dense_until))

    def _first_check(self, model: DurationModel) -> float:
        window = self._window(model)
        if window is None:
            return max(self.min_interval, model.quantile(self.first_quantile))
        return max(self.min_interval, window[0] + self.notice_interval)

    def _interval_at(self, model: DurationModel, age: float) -> float:
        """The unscaled gap after a check at `age`."""
        window = self._window(model)
        if window is not None and age < window[0]:
            # checked early (the model has moved since): the first dense check is still to come
            return max(self.min_interval, window[0] + self.notice_interval - age)
        if window is not None and age < window[1]:
            return max(self.min_interval, self.notice_interval)
        return min(self.max_interval, max(self.min_interval, self.notice_interval, self.tail_share * age))

    def _gap_before(self, model: DurationModel, age: float) -> float:
        """The unscaled gap that ended with a check at `age` (none before the first check)."""
        if age <= self._first_check(model) * (1 + self.jitter):
            return 0.0
        window = self._window(model)
        if window is not None and age < window[1] + self.notice_interval:
            return self.notice_interval
        # the previous check was at age / (1 + tail_share) when the gap grows with age
        return min(self.max_interval, max(self.notice_interval, age - age / (1 + self.tail_share)))

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


def _log_megapixels(pixels: int | None) -> float | None:
    return math.log(pixels / 1e6) if pixels else None


def _spread(residuals: list[float]) -> float:
    """A log-space standard deviation, from the median and 90th percentile of the residuals.

    Quantiles rather than the second moment: one odd task (a retry, a stall) should not widen
    every window; kept within 0.1..2.
    """
    ordered = sorted(residuals)
    spread = (_quantile(ordered, 0.9) - _quantile(ordered, 0.5)) / _UNIT_NORMAL.inv_cdf(0.9)
    return min(2.0, max(0.1, spread))


def _quantile(ordered: list[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated between neighbours."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
