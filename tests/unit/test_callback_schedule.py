"""The callback-aware schedule: when callbacks count as reliable, and how a late or early callback is taken."""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

import pytest

from bot.jobs import callbacks
from bot.jobs.callbacks import MIN_HEARD, CallbackSchedule
from bot.jobs.polling import PollSchedule
from tests.unit.test_polling import MEDIAN, simulate_sized, sized_tasks


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [1000.0]
    monkeypatch.setattr(callbacks.time, "monotonic", lambda: now[0])
    return now


def finish(schedule: CallbackSchedule, task_id: str) -> None:
    schedule.record("upscale", 5.0, task_id=task_id)


def test_callbacks_before_the_check_make_the_schedule_wait_for_them(clock):
    schedule = CallbackSchedule(PollSchedule())
    assert not schedule.reliable
    for n in range(MIN_HEARD):
        schedule.heard(f"t{n}")
        finish(schedule, f"t{n}")
    assert schedule.reliable
    plain = PollSchedule().first_delay("upscale", 5.0)
    assert schedule.first_delay("upscale", 5.0) > plain


def test_a_callback_coming_just_after_the_check_found_the_task_finished_still_counts(clock):
    schedule = CallbackSchedule(PollSchedule())
    for n in range(MIN_HEARD):
        finish(schedule, f"t{n}")  # the check was first ...
        clock[0] += 0.05
        schedule.heard(f"t{n}")  # ... and the callback came a moment later
    assert schedule.loss == 0 and schedule.reliable


def test_a_callback_that_never_comes_counts_as_lost_after_the_grace(clock):
    schedule = CallbackSchedule(PollSchedule())
    for n in range(MIN_HEARD):
        schedule.heard(f"t{n}")
        finish(schedule, f"t{n}")
    finish(schedule, "silent")
    assert schedule.reliable  # not yet: its callback may still come
    clock[0] += callbacks.CALLBACK_GRACE_S + 1
    assert schedule.loss > 0 and not schedule.reliable


def test_an_early_callback_is_remembered_for_the_task_stored_after_it(clock):
    schedule = CallbackSchedule(PollSchedule())
    schedule.heard("quick")
    assert schedule.was_heard("quick") and not schedule.was_heard("other")
    assert schedule.heard_since("quick", clock[0] - 1) and not schedule.heard_since("quick", clock[0] + 1)


@dataclass
class Learner(PollSchedule):
    """A plain schedule that notes what it is told to learn."""

    learnt: list[tuple[float, bool]] = field(default_factory=list)

    def record(self, operation: str, seconds: float, input_pixels: int | None = None, *,
               task_id: str | None = None, ended: bool = False) -> None:
        self.learnt.append((seconds, ended))


def test_a_task_is_learnt_as_ending_when_its_callback_came_not_somewhere_since_the_check_before(clock):
    learner = Learner()
    schedule = CallbackSchedule(learner)
    schedule.heard("called")
    clock[0] += 0.4  # the check the callback made due answers a moment later
    schedule.record("upscale", 8.4, task_id="called")
    schedule.record("upscale", 9.0, task_id="checked")  # found finished by a check, no callback (yet)
    assert learner.learnt == [(pytest.approx(8.0), True), (9.0, False)]


def test_a_callback_a_later_check_found_the_task_running_after_is_not_taken_as_its_end(clock):
    learner = Learner()
    schedule = CallbackSchedule(learner)
    schedule.heard("early")
    clock[0] += 1.0
    assert not schedule.heard_since("early", clock[0] - 0.5)  # a check asked after it: still running
    clock[0] += 4.0
    schedule.record("upscale", 12.0, task_id="early")
    assert learner.learnt == [(12.0, False)]
    assert schedule.loss == 0  # it was heard all the same


def test_while_most_callbacks_come_dense_checks_are_sparser_and_with_many_lost_they_are_polling_alones(clock):
    schedule = CallbackSchedule(PollSchedule(jitter=0.0))
    plain = schedule.base  # what it learns, polling alone would have learnt
    for n in range(18):  # a tenth lost: too many to wait for callbacks
        schedule.heard(f"t{n}")
        finish(schedule, f"t{n}")
    finish(schedule, "silent")
    finish(schedule, "quiet")
    clock[0] += callbacks.CALLBACK_GRACE_S + 1
    assert schedule.loss == pytest.approx(0.1) and not schedule.reliable
    assert schedule.first_delay("upscale", 5.0) > plain.first_delay("upscale", 5.0)
    age = plain.first_delay("upscale", 5.0)
    assert schedule.next_delay("upscale", age) == pytest.approx(callbacks.LOSSY_SPACING * plain.next_delay("upscale", age))
    for n in range(4):  # then a quarter of them
        finish(schedule, f"lost{n}")
    clock[0] += callbacks.CALLBACK_GRACE_S + 1
    assert schedule.loss >= callbacks.LOSSY_BELOW
    assert schedule.first_delay("upscale", 5.0) == plain.first_delay("upscale", 5.0)


def simulate_with_callbacks(schedule: CallbackSchedule, tasks: list[tuple[int, float]], clock: list[float], *,
                            lost: set[int], spacing: float = 3.0) -> tuple[float, float]:
    """simulate_sized with the service calling back as each task ends (but for the tasks in `lost`): the
    callback makes the task's check due at once. Returns (checks per task, p95 delay to notice)."""
    start = clock[0]
    # (time, kind, task): kind 0 submission, 1 the task ends, 2 a check (taken only if still the one due)
    events = [(index * spacing, 0, index) for index in range(len(tasks))]
    heapq.heapify(events)
    due: dict[int, float] = {}
    ends = [index * spacing + duration for index, (_, duration) in enumerate(tasks)]
    checks, lags = 0, []
    while events:
        now, kind, index = heapq.heappop(events)
        clock[0] = start + now
        pixels = tasks[index][0]
        age = now - index * spacing
        if kind == 0:
            due[index] = now + schedule.first_delay("op", MEDIAN, pixels)
            heapq.heappush(events, (due[index], 2, index))
            heapq.heappush(events, (ends[index], 1, index))
        elif kind == 1:
            if index not in lost:
                schedule.heard(str(index))
                due[index] = now
                heapq.heappush(events, (now, 2, index))
        elif due.get(index) == now:
            checks += 1
            if now >= ends[index]:
                schedule.record("op", age, pixels, task_id=str(index))
                del due[index]
                lags.append(now - ends[index])
            else:
                due[index] = now + schedule.next_delay("op", age, pixels)
                heapq.heappush(events, (due[index], 2, index))
    lags.sort()
    return checks / len(tasks), lags[int(0.95 * (len(lags) - 1))]


def test_with_a_tenth_of_callbacks_lost_the_schedule_checks_no_more_than_polling_alone(clock):
    tasks = sized_tasks(2000, seed=6)
    plain_checks, plain_lag = simulate_sized(PollSchedule(rng=random.Random(6)), tasks)
    rng = random.Random(6)
    lost = {index for index in range(len(tasks)) if rng.random() < 0.1}
    checks, lag = simulate_with_callbacks(CallbackSchedule(PollSchedule(rng=random.Random(6))), tasks, clock, lost=lost)
    # the lost tenth are found by the plain schedule; the rest at their callback, where polling alone
    # spends its last check
    assert checks <= plain_checks
    assert lag <= plain_lag
    # every callback arriving: about one check per task
    checks, lag = simulate_with_callbacks(CallbackSchedule(PollSchedule(rng=random.Random(6))), tasks, clock, lost=set())
    assert checks <= 1.2
