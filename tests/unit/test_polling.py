"""The poll schedule: fixed baselines, what it learns, where it places checks, and what that buys."""

from __future__ import annotations

import heapq
import math
import random

import pytest

from bot.jobs.polling import PollSchedule

MEDIAN, P95 = 8.0, 40.0
SIGMA = math.log(P95 / MEDIAN) / 1.6448536


def lognormal(count: int, seed: int, median: float = MEDIAN, sigma: float = SIGMA) -> list[float]:
    rng = random.Random(seed)
    return [rng.lognormvariate(math.log(median), sigma) for _ in range(count)]


def simulate(schedule: PollSchedule, durations: list[float], *, spacing: float = 2.0) -> tuple[float, float]:
    """Tasks submitted every `spacing` s, checked as the schedule says: (checks per task, p95 delay to notice)."""
    events = [(index * spacing + schedule.first_delay("op", MEDIAN), index, index * spacing, 1)
              for index in range(len(durations))]
    heapq.heapify(events)
    checks, lags = 0, []
    while events:
        now, index, submitted, count = heapq.heappop(events)
        age = now - submitted
        if age >= durations[index]:
            schedule.record("op", age)
            checks += count
            lags.append(age - durations[index])
        else:
            heapq.heappush(events, (now + schedule.next_delay("op", age), index, submitted, count + 1))
    lags.sort()
    return checks / len(durations), lags[int(0.95 * (len(lags) - 1))]


def test_fixed_policy_checks_every_interval_and_learns_nothing():
    schedule = PollSchedule.fixed(2.0)
    assert schedule.first_delay("op", 30.0) == 2.0
    for age in (0.0, 2.0, 100.0, 1000.0):
        assert schedule.next_delay("op", age) == 2.0
    schedule.record("op", 50.0)
    assert schedule.next_delay("op", 3.0) == 2.0


def test_policy_names_choose_the_schedule():
    assert PollSchedule.for_policy("fixed:5").first_delay("op", 8.0) == 5.0
    assert PollSchedule.for_policy("fixed:2", time_scale=0.1).next_delay("op", 0.3) == pytest.approx(0.2)
    assert PollSchedule.for_policy(" Adaptive ").fixed_interval is None
    for bad in ("sometimes", "fixed", "fixed:0", "fixed:-1", "fixed:x", "adaptive:3"):
        with pytest.raises(ValueError):
            PollSchedule.for_policy(bad)


def test_without_history_the_typical_duration_places_the_first_check():
    schedule = PollSchedule(jitter=0.0)
    # a wide log-normal around the typical 8 s: about 15% of tasks done by 2.8 s
    assert schedule.first_delay("upscale", 8.0) == pytest.approx(8.0 * math.exp(-1.0364), rel=0.01)
    # but never sooner than the minimum interval, however quick the operation claims to be
    assert schedule.first_delay("quick", 0.5) == schedule.min_interval


def test_learned_durations_move_the_first_check():
    schedule = PollSchedule(jitter=0.0)
    before = schedule.first_delay("headshot", 8.0)
    for duration in lognormal(1000, seed=1, median=30.0, sigma=0.5):
        schedule.record("headshot", duration)
    model = schedule.model("headshot")
    # the typical 8 s it started from has faded; the recorded ages overstate durations by half a check
    assert model.median == pytest.approx(30.0, rel=0.1)
    after = schedule.first_delay("headshot", 8.0)
    assert after > 2 * before
    assert after == pytest.approx(30.0 * math.exp(0.5 * -1.0364), rel=0.2)
    # other operations keep their own history
    assert schedule.first_delay("upscale", 8.0) == pytest.approx(before)


def test_a_few_early_tasks_only_nudge_the_prior():
    schedule = PollSchedule(jitter=0.0)
    prior = schedule.first_delay("op", 8.0)
    for _ in range(6):
        schedule.record("op", 1.0)  # the first tasks to finish are the quick ones
    nudged = schedule.first_delay("op", 8.0)
    assert prior * 0.5 < nudged < prior


def test_checks_are_dense_while_tasks_finish_and_sparse_in_the_tail():
    schedule = PollSchedule(jitter=0.0)
    schedule.first_delay("op", 8.0)
    for age in (3.0, 8.0, 20.0):
        assert schedule.next_delay("op", age) == pytest.approx(schedule.notice_interval)
    # far beyond nearly every task, a check waits a tenth of the task's age, up to the cap
    assert schedule.next_delay("op", 150.0) == pytest.approx(15.0)
    assert schedule.next_delay("op", 5000.0) == schedule.max_interval


def test_slow_operations_are_checked_less_often():
    schedule = PollSchedule(jitter=0.0)
    schedule.first_delay("headshot", 40.0)
    assert schedule.next_delay("headshot", 30.0) == pytest.approx(0.2 * 40.0)


def test_jitter_spreads_checks_within_a_few_percent():
    schedule = PollSchedule(rng=random.Random(3))
    schedule.first_delay("op", 8.0)
    delays = {round(schedule.next_delay("op", 10.0), 6) for _ in range(50)}
    assert len(delays) > 40
    assert all(abs(delay - schedule.notice_interval) <= schedule.notice_interval * schedule.jitter + 1e-9
               for delay in delays)


def test_time_scale_scales_delays_and_learns_in_unscaled_seconds():
    plain, fast = PollSchedule(jitter=0.0), PollSchedule(jitter=0.0, time_scale=0.1)
    for duration in lognormal(100, seed=2, median=20.0):
        plain.record("op", duration)
        fast.record("op", duration * 0.1)
    assert fast.model("op").median == pytest.approx(plain.model("op").median)
    assert fast.first_delay("op", 8.0) == pytest.approx(0.1 * plain.first_delay("op", 8.0))
    assert fast.next_delay("op", 2.0) == pytest.approx(0.1 * plain.next_delay("op", 20.0))


def test_history_is_bounded_by_the_window():
    schedule = PollSchedule(window=50)
    for duration in [100.0] * 500 + [5.0] * 50:
        schedule.record("op", duration)
    # only the last 50 (all 5 s) count: the model forgot the old slow ones
    assert schedule.model("op").median < 10.0


def test_adaptive_polling_beats_fixed_2s_on_heavy_tailed_durations():
    durations = lognormal(2000, seed=7)
    fixed_checks, fixed_lag = simulate(PollSchedule.fixed(2.0), durations)
    checks, lag = simulate(PollSchedule(rng=random.Random(7)), durations)
    assert checks <= 0.9 * fixed_checks
    assert lag <= fixed_lag + 0.25


def test_backoff_honours_retry_after_and_grows():
    rng = random.Random(1)
    assert PollSchedule.backoff(1, retry_after=7.0, rng=rng) >= 7.0
    assert max(PollSchedule.backoff(1, rng=rng) for _ in range(100)) <= 2.0
    assert max(PollSchedule.backoff(4, rng=rng) for _ in range(100)) > 2.0
    assert max(PollSchedule.backoff(30, rng=rng) for _ in range(100)) <= 60.0


def test_invalid_settings_are_refused():
    with pytest.raises(ValueError):
        PollSchedule(time_scale=0)
    with pytest.raises(ValueError):
        PollSchedule.fixed(0.0)
    with pytest.raises(ValueError):
        PollSchedule(first_quantile=0.99, dense_until=0.5)
