"""When to check a running task's status: callbacks first, else a steady pace that skips the hopeless early checks.

With the service's callbacks trusted (configured, and hardly any lost), a task's first check comes late
(`late_factor` × its typical duration) and its callback makes the check due at once; a task still
running then (or whose callback was lost) is checked again when it is as old again (at most
`max_interval` later). Without callbacks, or while they go missing (more than `TOLERATED` of the last
`TRUST_WINDOW` tasks that checks of this process found finished had no callback within `grace` seconds;
a loss counts only while callbacks are trusted), checks start at `first_share` of the typical duration
(earlier ones could hardly find anything), come every `pace` seconds (as often as the provider's own
client; `sparse_factor` times that while most callbacks still come, as the checks then only find the
tasks whose callback was lost) and, past `tail_after` × the typical duration, back off to `tail_share`
of the task's age. The only thing learned is each operation's typical duration: the running median of
its recent tasks, per input megapixel when the input's size is known (image work takes time in
proportion to pixels); until one of its tasks has ended, checks keep the steady pace from the start.
Every delay is multiplied by `time_scale` and every age divided by it, so a benchmark can run against
a faster sandbox.
"""

from __future__ import annotations

import statistics
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Protocol

#: callbacks are trusted while at most TOLERATED of this many last finished tasks went without one: a few
#: lost cost those tasks a late notice, a tenth lost would cost the p95 delay
TRUST_WINDOW = 40
TOLERATED = 2
_KEPT = 4096


class Schedule(Protocol):
    """What the worker asks of a poll schedule, and tells it."""

    def first_delay(self, operation: str, typical_seconds: float, input_pixels: int | None = None) -> float:
        """Seconds from submission to a task's first status check."""
        ...

    def next_delay(self, operation: str, age_seconds: float, input_pixels: int | None = None) -> float:
        """Seconds until the next check of a task that has been running `age_seconds`."""
        ...

    def finished(self, operation: str, seconds: float, input_pixels: int | None, *, task_id: str,
                 announced: bool | None) -> None:
        """A check found the task finished `seconds` after submission; `announced`: its check was moved early
        (a callback, here or on another replica), False: it came as planned here, None: unknown."""
        ...

    def heard(self, task_id: str) -> None:
        """A callback for this task arrived."""
        ...

    def was_heard(self, task_id: str) -> bool:
        """Whether a callback for this task came (a quick task may call back before it is stored)."""
        ...

    def heard_since(self, task_id: str, since: float) -> bool:
        """Whether its callback came after `since` (monotonic): a check then in flight may have missed the end."""
        ...


@dataclass
class PollSchedule:
    """The poll rule of the module docstring; `fixed_interval` set: a check every so many seconds, nothing learned."""

    callbacks: bool = False
    pace: float = 2.0
    first_share: float = 0.55
    late_factor: float = 3.0
    tail_share: float = 0.1
    tail_after: float = 2.0
    sparse_factor: float = 1.25
    max_interval: float = 60.0
    window: int = 50
    #: a callback that comes this long after a check found its task finished still counts as heard
    grace: float = 5.0
    time_scale: float = 1.0
    fixed_interval: float | None = None
    _samples: dict[tuple[str, bool], deque[float]] = field(default_factory=dict, repr=False)
    _guess: dict[str, float] = field(default_factory=dict, repr=False)
    _heard: OrderedDict[str, float] = field(default_factory=OrderedDict, repr=False)
    #: tasks found finished with no callback yet -> when (monotonic)
    _unheard: OrderedDict[str, float] = field(default_factory=OrderedDict, repr=False)
    _announced: deque[bool] = field(default_factory=lambda: deque(maxlen=TRUST_WINDOW), repr=False)

    def __post_init__(self) -> None:
        if self.time_scale <= 0 or (self.fixed_interval is not None and self.fixed_interval <= 0):
            raise ValueError("time_scale and a fixed poll interval must be positive")

    @classmethod
    def for_policy(cls, policy: str, *, time_scale: float = 1.0, callbacks: bool = False) -> PollSchedule:
        """The schedule a setting names: "adaptive", or "fixed:<seconds>" (e.g. "fixed:2")."""
        name, _, argument = policy.strip().lower().partition(":")
        if name == "adaptive" and not argument:
            return cls(callbacks=callbacks, time_scale=time_scale)
        if name == "fixed":
            try:
                seconds = float(argument)
            except ValueError:
                seconds = 0.0
            if seconds > 0:
                return cls(callbacks=callbacks, time_scale=time_scale, fixed_interval=seconds)
        raise ValueError(f"unknown poll policy {policy!r}: use 'adaptive' or 'fixed:<seconds>'")

    def typical(self, operation: str, input_pixels: int | None = None) -> float:
        """The median duration of the operation's recent tasks (of this input size); its catalogue guess before any."""
        samples = self._samples.get((operation, bool(input_pixels)))
        if not samples:
            return self._guess.get(operation, 10.0)
        return statistics.median(samples) * (input_pixels / 1e6 if input_pixels else 1.0)

    @property
    def trusted(self) -> bool:
        """Whether checks wait for callbacks: configured, and hardly any went missing of late."""
        self._count_missing(time.monotonic())
        # not "once one came": a replica the service does not call back may never hear one itself
        return self.callbacks and self._announced.count(False) <= TOLERATED

    def first_delay(self, operation: str, typical_seconds: float, input_pixels: int | None = None) -> float:
        self._guess.setdefault(operation, typical_seconds)
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        if not self._learnt(operation, input_pixels):
            # nothing learnt yet: the catalogue's guess may be far off, and callbacks may not come at all
            return self.pace * self.time_scale
        if self.trusted:
            return max(self.pace / 2, self.late_factor * self.typical(operation, input_pixels)) * self.time_scale
        return max(self.pace / 2, self.first_share * self.typical(operation, input_pixels)) * self.time_scale

    def next_delay(self, operation: str, age_seconds: float, input_pixels: int | None = None) -> float:
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        age = age_seconds / self.time_scale
        if self.trusted and self._learnt(operation, input_pixels):  # late, or its callback was lost: the next check waits as long again
            late = self.late_factor * self.typical(operation, input_pixels) - age
            return min(self.max_interval, max(self.pace, late, age)) * self.time_scale
        # while most callbacks come, a check finds only the few tasks whose callback was lost: fewer will do
        pace = self.pace * (self.sparse_factor if self.callbacks and self._mostly_announced() else 1.0)
        if age < self.tail_after * self.typical(operation, input_pixels):
            return pace * self.time_scale
        return min(self.max_interval, max(pace, self.tail_share * age)) * self.time_scale

    def finished(self, operation: str, seconds: float, input_pixels: int | None, *, task_id: str,
                 announced: bool | None) -> None:
        heard = self._heard.pop(task_id, None) is not None or bool(announced)
        if heard:
            self._announced.append(True)
        elif announced is False and self.trusted:
            # a loss counts only at a check that waited for the callback: one found by the steady pace may
            # have called back another replica, and counting it would keep this one polling for good
            self._unheard[task_id] = time.monotonic()
            self._trim(self._unheard)
        if self.fixed_interval is None:
            # a callback's check comes at the end; a scheduled one, on average half a pace after it
            ended = seconds / self.time_scale - (0.0 if heard else self.pace / 2)
            per = input_pixels / 1e6 if input_pixels else 1.0
            self._samples.setdefault((operation, bool(input_pixels)), deque(maxlen=self.window)).append(
                max(0.1, ended) / per)

    def heard(self, task_id: str) -> None:
        if self._unheard.pop(task_id, None) is not None:
            self._announced.append(True)  # it came just after a check had found the task finished
            return
        self._heard[task_id] = time.monotonic()
        self._trim(self._heard)

    def was_heard(self, task_id: str) -> bool:
        return task_id in self._heard

    def heard_since(self, task_id: str, since: float) -> bool:
        return self._heard.get(task_id, float("-inf")) >= since

    def _count_missing(self, now: float) -> None:
        while self._unheard and now - next(iter(self._unheard.values())) >= self.grace * self.time_scale:
            self._unheard.popitem(last=False)
            self._announced.append(False)

    def _learnt(self, operation: str, input_pixels: int | None) -> bool:
        return (operation, bool(input_pixels)) in self._samples

    def _mostly_announced(self) -> bool:
        return sum(self._announced) >= 0.8 * len(self._announced)

    @staticmethod
    def _trim(kept: OrderedDict[str, float]) -> None:
        while len(kept) > _KEPT:
            kept.popitem(last=False)
