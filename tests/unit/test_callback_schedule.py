"""The callback-aware schedule: when callbacks count as reliable, and how a late or early callback is taken."""

from __future__ import annotations

import pytest

from bot.jobs import callbacks
from bot.jobs.callbacks import MIN_HEARD, CallbackSchedule
from bot.jobs.polling import PollSchedule


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
