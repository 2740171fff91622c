"""When to check a running task's status: callbacks first, else a steady pace that skips the hopeless early checks.

With the service's callbacks trusted (configured, and none lost of late), a task's first check comes
late (`late_factor` × its typical duration) and its callback makes the check due at once; a task still
running then (or whose callback was lost) is checked again when it is as old again (at most
`max_interval` later). Whether a callback came is read from the job's row (`callback_at`), so every
replica counts the callbacks another one received. Without callbacks, or while they go missing (more
than `tolerated` of the last `trust_window` tasks found finished within `memory` seconds had none),
checks start at `first_share` of the typical duration (earlier ones could hardly find anything), come
every `pace` seconds (as often as the provider's own client; `sparse_factor` times that while most
callbacks still come, as the checks then only find the tasks whose callback was lost) and, past
`tail_after` × the typical duration, back off to `tail_share` of the task's age. The only thing learned
is each operation's typical duration: the running median of its recent tasks, per input megapixel when
the input's size is known (image work takes time in proportion to pixels, above `OVERHEAD_PIXELS`: below
it the service's fixed overhead dominates, so a thumbnail teaches nothing about a photo); until one of its tasks has
ended, checks keep the steady pace from the start. A task the catalogue expects to take minutes (a video:
`long_task` seconds or more) is no such guess: its checks start at `first_share` of that duration at once
and come every `long_share` of it (at least `pace`), so a two-minute video takes a handful of checks,
not sixty. Every delay is multiplied by `time_scale` and every
age divided by it, so a benchmark can run against a faster sandbox.
"""

from __future__ import annotations

import statistics
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Protocol

_KEPT = 4096
#: inputs smaller than this (about 400 x 250) take about as long as one this size: a task's fixed overhead
#: dominates them, so their durations must not be scaled up to a photo's size as if all of it were pixel work
OVERHEAD_PIXELS = 100_000


def fixed_interval_of(policy: str) -> float | None:
    """The poll policy a setting names: None for "adaptive", the seconds of "fixed:<seconds>" (POLL_POLICY)."""
    name, _, argument = policy.strip().lower().partition(":")
    if name == "adaptive" and not argument:
        return None
    try:
        seconds = float(argument) if name == "fixed" else 0.0
    except ValueError:
        seconds = 0.0
    if seconds > 0:
        return seconds
    raise ValueError("use 'adaptive' or 'fixed:<seconds>', e.g. fixed:2")


class Schedule(Protocol):
    """What the worker asks of a poll schedule, and tells it."""

    def first_delay(self, operation: str, typical_seconds: float, input_pixels: int | None = None) -> float:
        """Seconds from submission to a task's first status check."""
        ...

    def next_delay(self, operation: str, age_seconds: float, input_pixels: int | None = None) -> float:
        """Seconds until the next check of a task that has been running `age_seconds`."""
        ...

    def finished(self, operation: str, seconds: float, input_pixels: int | None, *, heard: bool) -> None:
        """A check found the task finished `seconds` after submission; `heard`: its callback came (to any replica)."""
        ...

    def heard(self, task_id: str) -> None:
        """A callback for this task arrived here."""
        ...

    def was_heard(self, task_id: str) -> bool:
        """Whether a callback for this task came here (a quick task may call back before it is stored)."""
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
    #: callbacks are trusted while at most `tolerated` of the last `trust_window` tasks found finished
    #: within `memory` seconds had none: a tenth lost must switch to polling (a lost one waits for its
    #: late check only while trusted), and trust must come back soon once callbacks arrive again
    trust_window: int = 40
    tolerated: int = 0
    memory: float = 45.0
    time_scale: float = 1.0
    fixed_interval: float | None = None
    #: an operation expected to take at least this long (seconds) is polled by its duration from the start
    long_task: float = 60.0
    long_share: float = 0.1
    _samples: dict[tuple[str, bool], deque[float]] = field(default_factory=dict, repr=False)
    _guess: dict[str, float] = field(default_factory=dict, repr=False)
    _heard: OrderedDict[str, float] = field(default_factory=OrderedDict, repr=False)
    #: (monotonic time, whether its callback came) of the last tasks found finished
    _outcomes: deque[tuple[float, bool]] = field(default_factory=deque, repr=False)

    def __post_init__(self) -> None:
        self._outcomes = deque(maxlen=self.trust_window)
        if self.time_scale <= 0 or (self.fixed_interval is not None and self.fixed_interval <= 0):
            raise ValueError("time_scale and a fixed poll interval must be positive")

    @classmethod
    def for_policy(cls, policy: str, *, time_scale: float = 1.0, callbacks: bool = False) -> PollSchedule:
        """The schedule a setting names: "adaptive", or "fixed:<seconds>" (e.g. "fixed:2")."""
        return cls(callbacks=callbacks, time_scale=time_scale, fixed_interval=fixed_interval_of(policy))

    def typical(self, operation: str, input_pixels: int | None = None) -> float:
        """The median duration of the operation's recent tasks (of this input size); its catalogue guess before any."""
        samples = self._samples.get((operation, bool(input_pixels)))
        if not samples:
            return self._guess.get(operation, 10.0)
        return statistics.median(samples) * _megapixels(input_pixels)

    @property
    def trusted(self) -> bool:
        """Whether checks wait for callbacks: configured, and hardly any went missing of late."""
        return self.callbacks and sum(not heard for heard in self._recent()) <= self.tolerated

    def first_delay(self, operation: str, typical_seconds: float, input_pixels: int | None = None) -> float:
        self._guess.setdefault(operation, typical_seconds)
        if self.fixed_interval is not None:
            return self.fixed_interval * self.time_scale
        if not self._learnt(operation, input_pixels) and typical_seconds < self.long_task:
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
        if (typical := self.typical(operation, input_pixels)) >= self.long_task:
            pace = max(pace, self.long_share * typical)
        if age < self.tail_after * self.typical(operation, input_pixels):
            return pace * self.time_scale
        return min(self.max_interval, max(pace, self.tail_share * age)) * self.time_scale

    def finished(self, operation: str, seconds: float, input_pixels: int | None, *, heard: bool) -> None:
        self._outcomes.append((time.monotonic(), heard))
        if self.fixed_interval is None:
            # a callback's check comes at the end; a scheduled one, on average half a pace after it
            ended = seconds / self.time_scale - (0.0 if heard else self.pace / 2)
            self._samples.setdefault((operation, bool(input_pixels)), deque(maxlen=self.window)).append(
                max(0.1, ended) / _megapixels(input_pixels))

    def heard(self, task_id: str) -> None:
        self._heard[task_id] = time.monotonic()
        while len(self._heard) > _KEPT:
            self._heard.popitem(last=False)

    def was_heard(self, task_id: str) -> bool:
        return task_id in self._heard

    def _recent(self) -> list[bool]:
        """Whether each task found finished in the last `memory` seconds had its callback."""
        since = time.monotonic() - self.memory * self.time_scale
        return [heard for at, heard in self._outcomes if at >= since]

    def _learnt(self, operation: str, input_pixels: int | None) -> bool:
        return (operation, bool(input_pixels)) in self._samples

    def _mostly_announced(self) -> bool:
        recent = self._recent()
        return sum(recent) >= 0.8 * len(recent)


def _megapixels(input_pixels: int | None) -> float:
    """The size a duration scales with: megapixels, at least the overhead's; 1 when the size is unknown."""
    return max(input_pixels, OVERHEAD_PIXELS) / 1e6 if input_pixels else 1.0
