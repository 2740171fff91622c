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
    first = schedule.first_delay("upscale", 8.0)
    # a wide log-normal around the typical 8 s: the first check comes one interval after tasks
    # start finishing at a noticeable rate, well before the typical duration
    assert 2.0 < first < 8.0
    assert schedule.first_delay("headshot", 40.0) > 2 * first
    # a quick operation is first checked about one interval in (its tasks finish from the start)
    assert schedule.min_interval <= schedule.first_delay("quick", 0.5) <= schedule.notice_interval + 0.5


def test_learned_durations_move_the_first_check():
    schedule = PollSchedule(jitter=0.0)
    before = schedule.first_delay("headshot", 8.0)
    for duration in lognormal(1000, seed=1, median=30.0, sigma=0.5):
        schedule.record("headshot", duration)
    model = schedule.model("headshot")
    # the typical 8 s it started from has faded; the recorded ages overstate durations by half a check
    assert model.median == pytest.approx(30.0, rel=0.1)
    assert model.sigma == pytest.approx(0.5, rel=0.25)
    after = schedule.first_delay("headshot", 8.0)
    assert after > 2 * before
    assert 30.0 * math.exp(0.5 * -2.5) < after < 30.0
    # other operations keep their own history
    assert schedule.first_delay("upscale", 8.0) == pytest.approx(before)


def sized_tasks(count: int, seed: int) -> list[tuple[int, float]]:
    """(input pixels, duration): time linear in pixels (8 s at 0.3 MP), log-normal noise of 0.3."""
    rng = random.Random(seed)
    tasks = []
    for _ in range(count):
        pixels = int(0.3e6 * rng.lognormvariate(0.0, 0.9))
        tasks.append((pixels, 8.0 * pixels / 0.3e6 * rng.lognormvariate(0.0, 0.3)))
    return tasks


def simulate_sized(schedule: PollSchedule, tasks: list[tuple[int, float]], *, spacing: float = 3.0,
                   operation: str = "op") -> tuple[float, float]:
    """Like simulate, each task's size handed to the schedule and its first check placed when it is submitted."""
    events = [(index * spacing, index, index * spacing, 0) for index in range(len(tasks))]
    heapq.heapify(events)
    checks, lags = 0, []
    while events:
        now, index, submitted, count = heapq.heappop(events)
        pixels, duration = tasks[index]
        age = now - submitted
        if count == 0:  # submission: the first check uses what has been learned by now
            heapq.heappush(events, (now + schedule.first_delay(operation, MEDIAN, pixels), index, submitted, 1))
        elif age >= duration:
            schedule.record(operation, age, pixels)
            checks += count
            lags.append(age - duration)
        else:
            heapq.heappush(events, (now + schedule.next_delay(operation, age, pixels), index, submitted, count + 1))
    lags.sort()
    return checks / len(tasks), lags[int(0.95 * (len(lags) - 1))]


def test_learns_how_durations_grow_with_input_size():
    schedule = PollSchedule(jitter=0.0)
    simulate_sized(schedule, sized_tasks(400, seed=3), operation="upscale")
    small, large = schedule.model("upscale", 300_000), schedule.model("upscale", 1_200_000)
    assert large.median / small.median == pytest.approx(4.0, rel=0.2)
    assert small.median == pytest.approx(8.0, rel=0.15)
    # knowing the size leaves only the noise (0.3); not knowing it, the spread of sizes too
    assert small.sigma == pytest.approx(0.3, abs=0.06)
    assert schedule.model("upscale").sigma > 0.7
    # so checks start later for a larger input, and sit where its tasks finish
    first_small = schedule.first_delay("upscale", 8.0, 300_000)
    first_large = schedule.first_delay("upscale", 8.0, 1_200_000)
    assert first_large > 3 * first_small
    assert small.quantile(0.01) < first_small < small.median
    assert schedule.next_delay("upscale", first_large, 1_200_000) == pytest.approx(schedule.notice_interval)
    # far beyond the large input's tasks, checks thin out to a tenth of the age
    assert schedule.next_delay("upscale", 150.0, 1_200_000) == pytest.approx(15.0)


def test_a_handful_of_tasks_is_enough_to_place_checks_by_size():
    schedule = PollSchedule(jitter=0.0)
    simulate_sized(schedule, sized_tasks(8, seed=11), operation="upscale")
    # eight tasks (of sizes around 0.3 MP): the model already knows the pace and, from the prior
    # that time grows with pixels, what a four times larger input takes
    small, large = schedule.model("upscale", 300_000), schedule.model("upscale", 1_200_000)
    assert small.median == pytest.approx(8.0, rel=0.25)
    assert large.median == pytest.approx(32.0, rel=0.3)
    assert small.sigma < 0.5
    # an operation never seen yet starts from that pace, scaled by its typical duration
    schedule.first_delay("headshot", 16.0, 300_000)
    assert schedule.model("headshot", 300_000).median == pytest.approx(2 * small.median, rel=0.1)
    assert schedule.model("headshot", 300_000).sigma > small.sigma


def test_an_operation_whose_guess_is_borrowed_is_first_checked_early_in_it():
    # one headshot of a tiny photo has finished; an upscale of its 512×512 result is guessed from
    # that pace carried to 33 times the pixels: a wide guess, whose hazard peaks late
    schedule = PollSchedule(jitter=0.0)
    schedule.first_delay("headshot", 40.0, 8_000)
    schedule.record("headshot", 7.8, 8_000)
    first = schedule.first_delay("upscale", 8.0, 262_144)
    guess = schedule.model("upscale", 262_144)
    assert first == pytest.approx(guess.quantile(schedule.first_quantile))
    window = guess.hazard_window(schedule.dense_hazard)
    assert window is None or first < window[0]
    # once one of its own tasks has finished, the dense window places its checks again
    schedule.record("upscale", 3.0, 262_144)
    assert schedule.first_delay("upscale", 8.0, 262_144) > schedule.model("upscale", 262_144).quantile(schedule.first_quantile)


def test_an_operation_whose_time_does_not_grow_with_size_unlearns_the_prior_slope():
    schedule = PollSchedule(jitter=0.0)
    rng = random.Random(2)
    tasks = [(int(0.3e6 * rng.lognormvariate(0.0, 0.9)), 20.0 * rng.lognormvariate(0.0, 0.2)) for _ in range(300)]
    simulate_sized(schedule, tasks, operation="imagine")
    small, large = schedule.model("imagine", 100_000), schedule.model("imagine", 1_000_000)
    assert large.median / small.median == pytest.approx(1.0, abs=0.25)
    assert small.median == pytest.approx(20.0, rel=0.15)


def test_operations_that_grow_alike_keep_to_their_shared_slope():
    # three operations of their own pace, each in proportion to pixels, a hundred tasks each: one
    # shared slope is learnt from all three, and each operation keeps to it (a slope fitted per
    # operation errs about twice as far: 0.05 on average here, 0.10 at worst)
    factors = {"upscale": 1.0, "colorize": 0.8, "restore": 1.25}
    errors = []
    for seed in range(12):
        schedule, rng = PollSchedule(jitter=0.0), random.Random(seed)
        for operation, factor in factors.items():
            pixels = [int(0.3e6 * rng.lognormvariate(0.0, 0.9)) for _ in range(100)]
            simulate_sized(schedule, [(p, 8.0 * factor * p / 0.3e6 * rng.lognormvariate(0.0, 0.3)) for p in pixels],
                           operation=operation)
        slopes = [math.log(schedule.model(operation, 2_500_000).median / schedule.model(operation, 100_000).median)
                  / math.log(25) for operation in factors]
        errors.append(max(abs(slope - 1.0) for slope in slopes))
    assert sum(errors) / len(errors) <= 0.035


def test_with_sizes_adaptive_polling_checks_like_fixed_5s_with_the_delay_of_fixed_2s():
    tasks = sized_tasks(300, seed=5)
    fixed2_checks, fixed2_lag = simulate_sized(PollSchedule.fixed(2.0), tasks)
    fixed5_checks, fixed5_lag = simulate_sized(PollSchedule.fixed(5.0), tasks)
    # from a cold start: under half of fixed 2 s's checks, about as many as fixed 5 s, at less
    # than half fixed 5 s's delay
    checks, lag = simulate_sized(PollSchedule(rng=random.Random(5)), tasks)
    assert checks <= 0.5 * fixed2_checks and checks <= 1.1 * fixed5_checks
    assert lag < 0.5 * fixed5_lag
    # once learned, the p95 delay is within a quarter second of fixed 2 s
    learned = PollSchedule(rng=random.Random(5))
    simulate_sized(learned, sized_tasks(2000, seed=4))
    tasks = sized_tasks(2000, seed=6)
    checks, lag = simulate_sized(learned, tasks)
    fixed2_checks, fixed2_lag = simulate_sized(PollSchedule.fixed(2.0), tasks)
    fixed5_checks, fixed5_lag = simulate_sized(PollSchedule.fixed(5.0), tasks)
    assert checks <= 0.5 * fixed2_checks and checks <= 1.1 * fixed5_checks
    assert lag <= fixed2_lag + 0.25 and lag < 0.5 * fixed5_lag


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
    for age in (5.0, 8.0, 20.0):
        assert schedule.next_delay("op", age) == pytest.approx(schedule.notice_interval)
    # far beyond nearly every task, a check waits a tenth of the task's age, up to the cap
    assert schedule.next_delay("op", 150.0) == pytest.approx(15.0)
    assert schedule.next_delay("op", 5000.0) == schedule.max_interval


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
    # durations independent of everything: only the marginal can be learned, and the saving is small
    assert checks <= 0.95 * fixed_checks
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


def test_a_long_history_is_refitted_in_steps_not_on_every_task():
    schedule = PollSchedule(jitter=0.0)
    for _ in range(64):
        schedule.record("op", 10.0, 300_000)
    before = schedule.model("op", 300_000).median
    schedule.record("op", 40.0, 300_000)
    assert schedule.model("op", 300_000).median == before  # one new sample in 65 waits for the next refit
    for _ in range(2):
        schedule.record("op", 40.0, 300_000)
    assert schedule.model("op", 300_000).median > before  # which comes once 1/32 of the samples is new
