"""When to ask the service about a running task next.

Task durations are heavy-tailed over all requests, but much of that spread is explained: each
operation has its own pace, and a task's time grows with its input's size (pixels). Every status
check costs a request, so the schedule learns, per operation, how durations depend on the input
and places checks where the task in hand is likely to finish:

1. The duration model is a log-log regression of recent durations on input megapixels:
   log duration = level of the operation + slope × log megapixels + noise. For one input size that
   gives a log-normal: the task's conditional distribution. It has to be good after a handful of
   tasks, so it starts from what holds for most image work and pools what operations share: the
   shared slope starts at 1 (time in proportion to pixels) and soon follows the pooled data, while
   each operation's own slope is held to the shared one until a few hundred of its tasks say
   otherwise (slopes fitted per operation from a hundred tasks each put the largest and smallest
   inputs' durations up to a quarter off, enough to misplace their checks); the noise is pooled; a
   new operation's level is the others' pace scaled by its typical duration. The model's spread
   adds what is still unsure (level, slope) to the noise, so early tasks get wider windows. Nothing
   finished yet, or no size: the operation's own durations, starting from its typical duration
   with a wide spread.
   A finished task is only known to have ended between two checks; it is recorded as the model's
   mean over that gap, with the gap's uncertainty added to the spread (a task seen at its first
   check may have finished long before).
2. Checks are dense (every `notice_interval`, 2.1 s) only where the conditional hazard, the chance
   per second that a still-running task finishes now, is at least `dense_hazard`; elsewhere a check
   rarely finds anything, and the few tasks finishing there wait longer. The first check comes one
   interval after the dense window opens, so a task finishing at its opening is still noticed within
   the interval; but while an operation's guess is borrowed from the others (none of its own tasks
   has finished), at the `first_quantile` of that guess. The window closes at the conditional
   `dense_until` quantile at the latest.
3. Past the window checks come at a tenth of the task's age (at least the dense interval).

So the p95 delay to notice is spent where it buys most: on the early and late edges of each task's
conditional distribution and on the slowest classes of task, while the bulk of tasks is noticed
within 2.1 s (the target is fixed 2 s polling's p95 plus 0.25 s; 2.1 s spends a little of that on
fewer checks). See bench/README.md for the measured trade-off against fixed 2 s and 5 s polling,
and `python -m bench.perf.polling_sim` for this rule handed the true distributions instead.
`fixed()` gives the provider SDK's policy, kept as the baseline the benchmark compares against.

Every delay is multiplied by `time_scale` and every recorded age divided by it, so a benchmark can
run the same policy against a sandbox whose tasks are ten times faster and report unscaled seconds.
The schedule keeps a few hundred (size, duration) samples per operation and nothing per job: the
worker hands the input's pixel count with every call.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field, replace
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

    def within(self, low: float, high: float) -> tuple[float, float]:
        """The mean and variance of log duration of a task known to have finished between `low` and `high` s."""
        beta = (math.log(high) - self.mu) / self.sigma
        alpha = (math.log(low) - self.mu) / self.sigma if low > 0 else -math.inf
        mass = _UNIT_NORMAL.cdf(beta) - _UNIT_NORMAL.cdf(alpha)
        if mass < 1e-9:
            # far from where the model expects it: the end of the interval nearest to the model
            return (math.log(high) if beta < 0 or low <= 0 else math.log(low)), 0.0
        # the moments of a normal truncated to (alpha, beta); alpha may be -inf (no check before)
        pdf_alpha, pdf_beta = (_UNIT_NORMAL.pdf(alpha) if low > 0 else 0.0), _UNIT_NORMAL.pdf(beta)
        tilt = (pdf_alpha - pdf_beta) / mass
        spread = 1 + ((alpha * pdf_alpha if low > 0 else 0.0) - beta * pdf_beta) / mass - tilt ** 2
        return self.mu + self.sigma * tilt, self.sigma ** 2 * max(0.0, spread)

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


#: an operation's model is refitted once 1/REFIT_SHARE of its samples is new (at once, for short histories)
REFIT_SHARE = 32


@dataclass(frozen=True)
class _Sums:
    """Sufficient statistics of one operation's recent samples (x: log megapixels, y: log seconds)."""

    #: samples with a known input size, their means and centred sums of squares and products
    n: int = 0
    mean_x: float = 0.0
    mean_y: float = 0.0
    sxx: float = 0.0
    sxy: float = 0.0
    syy: float = 0.0
    #: all samples, sized or not: count, mean and centred sum of squares of y
    count: int = 0
    all_mean: float = 0.0
    all_ss: float = 0.0

    @classmethod
    def of(cls, samples: list[tuple[float | None, float, float]]) -> _Sums:
        """The sums of (log megapixels, log seconds, uncertainty of that) samples.

        A sample's uncertainty (where in the gap between two checks the task ended) adds to the
        spread as it would have had the exact durations been known.
        """
        ys = [y for _, y, _ in samples]
        all_mean = sum(ys) / len(ys)
        all_ss = sum((y - all_mean) ** 2 + v for _, y, v in samples)
        sized = [(x, y, v) for x, y, v in samples if x is not None]
        if not sized:
            return cls(count=len(ys), all_mean=all_mean, all_ss=all_ss)
        mean_x = sum(x for x, _, _ in sized) / len(sized)
        mean_y = sum(y for _, y, _ in sized) / len(sized)
        return cls(n=len(sized), mean_x=mean_x, mean_y=mean_y,
                   sxx=sum((x - mean_x) ** 2 for x, _, _ in sized),
                   sxy=sum((x - mean_x) * (y - mean_y) for x, y, _ in sized),
                   syy=sum((y - mean_y) ** 2 + v for _, y, v in sized),
                   count=len(ys), all_mean=all_mean, all_ss=all_ss)


@dataclass
class PollSchedule:
    """Learns task durations per operation and input size, and places status checks around them."""

    #: while a task is likely to finish (see dense_hazard), checks come every `notice_interval` seconds
    notice_interval: float = 2.1
    #: the least chance per second that a running task finishes now for checks to be dense
    dense_hazard: float = 0.032
    #: ... and the dense window ends by this share of tasks (of that operation and size) done
    dense_until: float = 0.98
    #: when a task's hazard never reaches dense_hazard (a very slow one), or its operation's guess is
    #: borrowed from the others', the first check comes when this share of such tasks is done
    first_quantile: float = 0.05
    #: after the window, the next check waits this share of the task's age
    tail_share: float = 0.1
    min_interval: float = 1.0
    max_interval: float = 60.0
    #: spread of durations (log-space standard deviation) assumed before anything has finished
    prior_sigma: float = 1.0
    #: the assumed spread of one operation's durations on one input size (queueing, load), and how
    #: many finished tasks that assumption counts as
    prior_noise: float = 0.3
    prior_noise_weight: float = 4.0
    #: duration is assumed to grow in proportion to the input's pixels (log-log slope 1) ...
    prior_slope: float = 1.0
    #: ... held by this much (in units of the sum of squared log megapixels a sample set adds)
    slope_ridge: float = 10.0
    #: each operation's slope is held to the shared one by this much
    shared_slope_ridge: float = 300.0
    #: how far (log-space) an operation's pace may sit from what its typical duration suggests
    #: relative to the other operations'
    pace_spread: float = 0.3
    window: int = 300
    #: relative random spread of each delay, so checks of tasks started together drift apart
    jitter: float = 0.02
    #: every delay is multiplied by this (and recorded ages divided by it); 1 outside benchmarks
    time_scale: float = 1.0
    #: when set, the fixed policy: a check every so many (unscaled) seconds, nothing learned
    fixed_interval: float | None = None
    rng: random.Random = field(default_factory=random.Random)
    _samples: dict[str, deque[tuple[float | None, float, float]]] = field(default_factory=dict, repr=False)
    _typical: dict[str, float] = field(default_factory=dict, repr=False)
    _sums: dict[str, _Sums] = field(default_factory=dict, repr=False)
    _models: dict[tuple[str, float | None], DurationModel] = field(default_factory=dict, repr=False)
    #: per operation, samples recorded since its sums were last computed
    _unfitted: dict[str, int] = field(default_factory=dict, repr=False)

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

    def spaced(self, notice_interval: float) -> PollSchedule:
        """This schedule with its dense checks `notice_interval` apart; the two share what either learns."""
        return replace(self, notice_interval=notice_interval)  # the samples and models are the same objects

    # ---- learning ---------------------------------------------------------------------------------

    def record(self, operation: str, seconds: float, input_pixels: int | None = None, *,
               task_id: str | None = None, ended: bool = False) -> None:
        """Remember a finished task: `seconds` from submission to the check that saw it done, or with `ended`
        to the moment it ended (`task_id`: unused here)."""
        if self.fixed_interval is not None:
            return
        age = max(0.05, seconds / self.time_scale)
        model = self.model(operation, input_pixels)
        if ended:
            # learnt as this schedule's own checks would have seen it, so that what it learns, and so where
            # it checks, is the same as when it alone finds tasks finished
            age = self._first_check_after(model, age)
        # the task finished somewhere since the check before this one: where, the model says best,
        # and how unsure that is counts as spread (a wide gap says little about a short task)
        y, uncertainty = model.within(self._previous_check(model, age), age)
        samples = self._samples.setdefault(operation, deque(maxlen=self.window))
        samples.append((_log_megapixels(input_pixels), y, uncertainty))
        unfitted = self._unfitted.get(operation, 0) + 1
        # a refit costs time in proportion to the window: a busy bot refits once a share of the
        # samples is new, which changes the fit as little as one sample does a small history
        if unfitted * REFIT_SHARE < len(samples):
            self._unfitted[operation] = unfitted
            return
        self._unfitted[operation] = 0
        self._sums.pop(operation, None)
        # every operation's model leans on the others' (the shared slope and pace)
        self._models.clear()

    def model(self, operation: str, input_pixels: int | None = None) -> DurationModel:
        """The duration model of an operation's tasks with an input of this size (None: any size)."""
        x = _log_megapixels(input_pixels)
        key = (operation, None if x is None else round(x, 3))
        if key not in self._models:
            if len(self._models) >= 4096:  # many waiting jobs of many sizes: keep the cache bounded
                self._models.clear()
            self._models[key] = self._predict(operation, x)
        return self._models[key]

    def _predict(self, operation: str, x: float | None) -> DurationModel:
        """The model from the current samples (x: log megapixels), see the module's docstring."""
        prior_mu = math.log(max(self._typical.get(operation, 10.0), 0.1))
        sums = {name: self._sums_of(name) for name in self._samples}
        sized = {name: s for name, s in sums.items() if s.n}
        own = sums.get(operation, _Sums())
        if x is None or not sized:
            # no size to go by: the operation's own durations, starting from its typical one
            weight = self.prior_noise_weight
            mu = (own.count * own.all_mean + weight * prior_mu) / (own.count + weight)
            variance = (weight * self.prior_sigma ** 2 + own.all_ss) / (weight + own.count)
            return DurationModel(mu, math.sqrt(variance))
        ridge, pooled_sxx = self.slope_ridge, sum(s.sxx for s in sized.values())
        shared_slope = (sum(s.sxy for s in sized.values()) + ridge * self.prior_slope) / (pooled_sxx + ridge)
        pull = self.shared_slope_ridge
        slopes = {name: (s.sxy + pull * shared_slope) / (s.sxx + pull) for name, s in sized.items()}
        total = sum(s.n for s in sized.values())
        residual = sum(s.syy - 2 * slopes[name] * s.sxy + slopes[name] ** 2 * s.sxx for name, s in sized.items())
        noise = (self.prior_noise_weight * self.prior_noise ** 2 + residual) / (
            self.prior_noise_weight + max(0, total - len(sized)))
        # the common pace: how much slower or faster than typical the operations run at 1 MP
        pace = sum(s.n * (s.mean_y - shared_slope * s.mean_x - math.log(max(self._typical.get(name, 10.0), 0.1)))
                   for name, s in sized.items()) / total
        prior_variance = noise / total + self.pace_spread ** 2
        mean_x = own.mean_x if own.n else sum(s.n * s.mean_x for s in sized.values()) / total
        level = pace + prior_mu + shared_slope * mean_x
        level_variance = prior_variance
        if own.n:
            # the operation's own mean, weighed against the prior by how sure each is
            level_variance = 1 / (own.n / noise + 1 / prior_variance)
            level = level_variance * (own.n * own.mean_y / noise + level / prior_variance)
        slope = slopes.get(operation, shared_slope)
        # what is unsure about this operation's own slope, and about the shared one it is held to
        # (all there is for an operation without sized tasks of its own)
        held = pull / (own.sxx + pull)
        slope_variance = noise / (own.sxx + pull) + held ** 2 * noise / (pooled_sxx + ridge)
        mu = level + slope * (x - mean_x)
        return DurationModel(mu, math.sqrt(noise + level_variance + slope_variance * (x - mean_x) ** 2))

    def _sums_of(self, operation: str) -> _Sums:
        if operation not in self._sums:
            self._sums[operation] = _Sums.of(list(self._samples[operation]))
        return self._sums[operation]

    # ---- scheduling -------------------------------------------------------------------------------

    def first_delay(self, operation: str, typical_seconds: float, input_pixels: int | None = None) -> float:
        """Seconds from submission to the first status check of a task with an input of `input_pixels`."""
        self._typical.setdefault(operation, typical_seconds)
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        model = self.model(operation, input_pixels)
        # none of this operation's tasks has finished, but others' have: its guess, their pace carried to
        # this operation and size, may be far off, so the first check comes early in it, not where the
        # borrowed hazard peaks
        borrowed = (operation not in self._samples and input_pixels is not None
                    and any(self._sums_of(name).n for name in self._samples))
        first = self._early_check(model) if borrowed else self._first_check(model)
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
            return self._early_check(model)
        return max(self.min_interval, window[0] + self.notice_interval)

    def _early_check(self, model: DurationModel) -> float:
        """The unscaled age by which `first_quantile` of such tasks are done."""
        return max(self.min_interval, model.quantile(self.first_quantile))

    def _interval_at(self, model: DurationModel, age: float) -> float:
        """The unscaled gap after a check at `age`."""
        window = self._window(model)
        if window is not None and age < window[0]:
            # checked early (the model has moved since): the first dense check is still to come
            return max(self.min_interval, window[0] + self.notice_interval - age)
        if window is not None and age < window[1]:
            return max(self.min_interval, self.notice_interval)
        return min(self.max_interval, max(self.min_interval, self.notice_interval, self.tail_share * age))

    def _first_check_after(self, model: DurationModel, ended: float) -> float:
        """The unscaled age of the first of this schedule's checks (unjittered) at or after `ended`."""
        age = self._first_check(model)
        while age < ended:
            age += self._interval_at(model, age)
        return age

    def _previous_check(self, model: DurationModel, age: float) -> float:
        """The unscaled age of the check before the one at `age` (0 when that was the first check)."""
        if age <= self._first_check(model) * (1 + self.jitter):
            return 0.0
        window = self._window(model)
        if window is not None and age < window[1] + self.notice_interval:
            return age - self.notice_interval
        # past the window each gap is a share of the age
        return max(0.0, age - min(self.max_interval, max(self.notice_interval, age - age / (1 + self.tail_share))))

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
