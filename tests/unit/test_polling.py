"""The poll rule: callbacks first, else a steady pace after the hopeless early checks, backing off with age."""

from __future__ import annotations

import pytest

from bot.jobs.polling import OVERHEAD_PIXELS, PollSchedule

MP = 1_000_000


def learnt(schedule: PollSchedule, seconds: float, pixels: int | None = MP, count: int = 9) -> PollSchedule:
    """The schedule after `count` tasks of "op" were announced by their callbacks after `seconds`."""
    for _ in range(count):
        schedule.finished("op", seconds, pixels, heard=True)
    return schedule


def test_fixed_policies_and_the_time_scale_are_kept():
    assert PollSchedule.for_policy("fixed:5").first_delay("op", 8.0) == 5.0
    assert PollSchedule.for_policy("fixed:2", time_scale=0.1).next_delay("op", 0.3) == pytest.approx(0.2)
    for bad in ("fixed:0", "fixed:x", "fixed", "hazard", "adaptive:3"):
        with pytest.raises(ValueError):
            PollSchedule.for_policy(bad)
    fast = learnt(PollSchedule.for_policy(" Adaptive ", time_scale=0.1), 1.0)  # 10 s at full scale
    assert fast.first_delay("op", 8.0, MP) == pytest.approx(0.1 * learnt(PollSchedule(), 10.0).first_delay("op", 8.0, MP))


def test_polling_alone_skips_the_early_checks_then_keeps_pace_then_backs_off():
    schedule = learnt(PollSchedule(), 20.0)
    assert schedule.first_delay("op", 8.0, MP) == pytest.approx(0.55 * 20.0)
    assert schedule.next_delay("op", 12.0, MP) == 2.0  # around the typical duration: as often as the provider's client
    assert schedule.next_delay("op", 200.0, MP) == pytest.approx(20.0)  # long past it: a tenth of the age
    assert schedule.next_delay("op", 5000.0, MP) == 60.0


def test_the_typical_duration_is_a_running_median_per_operation_and_megapixel():
    schedule = PollSchedule(window=5)
    assert schedule.typical("op") == 10.0  # nothing seen yet: a default until the catalogue's guess is given
    schedule.first_delay("op", 8.0)
    assert schedule.typical("op") == 8.0 and schedule.typical("op", 2 * MP) == 8.0
    for seconds in (100.0, 4.0, 5.0, 6.0, 7.0, 5.0):  # the outlier leaves the window and never moved the median
        schedule.finished("op", seconds, 2 * MP, heard=True)
    assert schedule.typical("op", 2 * MP) == pytest.approx(5.0)
    assert schedule.typical("op", 4 * MP) == pytest.approx(10.0)  # twice the pixels, twice the time
    assert schedule.typical("other", 2 * MP) == 10.0
    # a task found by a scheduled check ended, on average, half a pace before it
    polled = PollSchedule()
    polled.finished("op", 9.0, None, heard=False)
    assert polled.typical("op") == pytest.approx(8.0)


def test_a_thumbnail_teaches_nothing_about_a_photo():
    # a task's fixed overhead dominates small inputs: 1.5 s for a 64x48 picture is not 490 s per megapixel,
    # which put a 512 px sticker's first check 70 s after its task had ended
    schedule = learnt(PollSchedule(), 1.5, 64 * 48)
    assert schedule.typical("op", 64 * 48) == schedule.typical("op", 300 * 300) == pytest.approx(1.5)
    assert schedule.typical("op", 512 * 512) == pytest.approx(1.5 * 512 * 512 / OVERHEAD_PIXELS)  # about 4 s
    assert schedule.first_delay("op", 8.0, 512 * 512) < 3.0


def test_with_callbacks_the_first_check_comes_late_and_a_callback_makes_a_check_due():
    schedule = learnt(PollSchedule(callbacks=True), 10.0)
    assert schedule.trusted
    assert schedule.first_delay("op", 8.0, MP) == pytest.approx(30.0)
    assert schedule.next_delay("op", 30.0, MP) == pytest.approx(30.0)  # late, or its callback lost: as long again
    schedule.heard("quick")
    assert schedule.was_heard("quick") and not schedule.was_heard("other")


def test_lost_callbacks_switch_to_polling_and_trust_returns_once_they_leave_the_window():
    schedule = learnt(PollSchedule(callbacks=True, trust_window=20, tolerated=1), 10.0, count=20)
    for _ in range(2):  # checks found them finished; no callback had come to any replica
        assert schedule.trusted  # one lost costs only its own task a late notice
        schedule.finished("op", 12.0, MP, heard=False)
    assert not schedule.trusted
    assert schedule.first_delay("op", 8.0, MP) < 10.0
    assert schedule.next_delay("op", 10.0, MP) == 2.5  # most callbacks come: the checks for the lost ones are sparser
    learnt(schedule, 10.0, count=18)
    assert not schedule.trusted
    learnt(schedule, 10.0, count=1)  # the first loss left the last 20 tasks
    assert schedule.trusted


def test_trust_returns_when_the_losses_are_older_than_the_memory(monkeypatch: pytest.MonkeyPatch):
    now = [1000.0]
    monkeypatch.setattr("bot.jobs.polling.time.monotonic", lambda: now[0])
    schedule = PollSchedule(callbacks=True, memory=45.0, time_scale=0.1)
    schedule.finished("op", 12.0, MP, heard=False)
    assert not schedule.trusted  # a lossy phase switches to polling at its first loss
    now[0] += 4.0
    assert not schedule.trusted
    now[0] += 1.0  # 45 s at this time scale: the loss is forgotten
    assert schedule.trusted


def test_a_callback_another_replica_received_counts_as_heard():
    # the job's row says whether its callback came, whichever replica it came to
    schedule = learnt(PollSchedule(callbacks=True), 10.0)
    for _ in range(40):
        schedule.finished("op", 12.0, MP, heard=True)
    assert schedule.trusted
    other = PollSchedule(callbacks=True)
    other.finished("op", 12.0, MP, heard=True)
    # configured: trusted before any came here (the service may call back another replica only)
    assert other.trusted and other.first_delay("op", 8.0, MP) == pytest.approx(36.0)


def test_before_anything_is_learnt_checks_start_at_the_providers_pace():
    schedule = PollSchedule()
    assert schedule.first_delay("op", 40.0, MP) == 2.0  # the catalogue's 40 s is only a guess
    assert learnt(schedule, 40.0, count=1).first_delay("op", 40.0, MP) == pytest.approx(0.55 * 40.0)
