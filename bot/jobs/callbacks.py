"""Polling when the service calls back: the callback is the fast path, the poll schedule the fallback.

A callback makes its task's check due now (`Worker.check_now`). While callbacks arrive for the tasks
that end, checking before then only costs requests, so the first check of a task moves out to where
it has almost surely ended (the duration model's `LATE_QUANTILE`), and a check before it is the
exception. Until MIN_HEARD callbacks came, and whenever callbacks go missing (a task found finished
by a check and no callback for it within CALLBACK_GRACE_S, in `LOSS_THRESHOLD` or more of the last
`WINDOW` finished tasks), checks follow the plain schedule, and the callbacks that do come cut each
task's checks short. A check often finds a task finished a moment before its callback comes: that
callback still counts as heard when it comes within the grace. Evidence is this process's own: a
callback that reached another replica counts here as lost, which only makes polling denser.

A lost callback must cost no more than polling alone. So the plain schedule learns a task whose
callback came as its own checks would have found it: at the first of them after the callback, the
end somewhere since the one before, which is what polling alone learns (taken at the check the
callback made due, right after the end, every duration would count short and every check move
early; taken exactly, the model is wider than the one the schedule's settings were tuned on, and
checks denser). And while most callbacks come (fewer than `LOSSY_BELOW` lost), the dense checks,
which then find only the tasks whose callback was lost, come `LOSSY_SPACING` times further apart:
with a tenth lost, the p95 delay over all tasks is about the median delay of the lost tenth (1.25 s
at 2.5 s spacing), and at a fifth about their three-quarter delay, about polling alone's p95.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque

from bot.jobs.polling import PollSchedule

#: the first check of a task comes at this quantile of its modelled duration while callbacks are reliable
LATE_QUANTILE = 0.995
WINDOW = 50
#: below this share of finished tasks without a callback, callbacks count as reliable
LOSS_THRESHOLD = 0.04
#: the share is taken over at least this many tasks, so one early loss already counts as 5%
MIN_EVIDENCE = 20
#: callbacks heard for finished tasks before checks wait for them (until then: the plain schedule)
MIN_HEARD = 5
#: while fewer than LOSSY_BELOW of the callbacks go missing, dense checks come this much further apart
LOSSY_SPACING = 1.25
LOSSY_BELOW = 0.2
#: how long after a check found a task finished its callback may still come and count as heard
CALLBACK_GRACE_S = 5.0
_HEARD_KEPT = 4096
#: when a callback came, for one a later check found the task still running after
_NOT_THE_END = float("-inf")


class CallbackSchedule:
    """A PollSchedule's interface whose first check waits for the callback while callbacks are reliable."""

    def __init__(self, base: PollSchedule) -> None:
        self.base = base
        self._sparse = base.spaced(base.notice_interval * LOSSY_SPACING)
        self._heard: OrderedDict[str, float] = OrderedDict()  # task id -> when its callback came (monotonic)
        self._outcomes: deque[bool] = deque(maxlen=WINDOW)  # True: a callback came for the finished task
        #: finished tasks whose callback has not come yet -> when they were found finished (monotonic)
        self._unheard: OrderedDict[str, float] = OrderedDict()

    def __getattr__(self, name: str) -> object:
        return getattr(self.base, name)

    @property
    def loss(self) -> float:
        """The share of recent finished tasks no callback announced."""
        self._count_missing(time.monotonic())
        lost = sum(1 for heard in self._outcomes if not heard)
        return lost / max(len(self._outcomes), MIN_EVIDENCE)

    @property
    def reliable(self) -> bool:
        """Whether checks may wait for callbacks: some came, and hardly any went missing."""
        loss = self.loss
        return sum(self._outcomes) >= MIN_HEARD and loss < LOSS_THRESHOLD

    def heard(self, task_id: str) -> None:
        """A callback for this task arrived."""
        if self._unheard.pop(task_id, None) is not None:
            self._outcomes.append(True)  # it came just after a check had found the task finished
            return
        self._heard[task_id] = time.monotonic()
        self._heard.move_to_end(task_id)
        while len(self._heard) > _HEARD_KEPT:
            self._heard.popitem(last=False)

    def was_heard(self, task_id: str) -> bool:
        """Whether a callback for this task came (a task that ends quickly may call back before it is stored)."""
        return task_id in self._heard

    def _count_missing(self, now: float) -> None:
        """Finished tasks whose callback did not come within the grace count as lost."""
        while self._unheard and (len(self._unheard) > _HEARD_KEPT
                                 or now - next(iter(self._unheard.values())) > CALLBACK_GRACE_S):
            self._unheard.popitem(last=False)
            self._outcomes.append(False)

    def heard_since(self, task_id: str, since: float) -> bool:
        """Whether a callback for this task came after `since` (monotonic): a check in flight then, which found
        the task running, may have missed the end. A callback before that check did not mark the end (the
        service showed it late, or it was forged): it still counts as heard, but not as when the task ended."""
        heard_at = self._heard.get(task_id)
        if heard_at is None:
            return False
        if heard_at >= since:
            return True
        self._heard[task_id] = _NOT_THE_END
        return False

    def _fallback(self) -> PollSchedule:
        """The schedule of the checks a callback may make needless: sparser while most callbacks come."""
        if sum(self._outcomes) >= MIN_HEARD and self.loss < LOSSY_BELOW:
            return self._sparse
        return self.base

    def first_delay(self, operation: str, typical_seconds: float, input_pixels: int | None = None) -> float:
        """The fallback's first check, or (callbacks reliable) the one where the task has almost surely ended."""
        delay = self._fallback().first_delay(operation, typical_seconds, input_pixels)
        if not self.reliable or self.base.fixed_interval is not None:
            return delay
        late = self.base.model(operation, input_pixels).quantile(LATE_QUANTILE) * self.base.time_scale
        return max(delay, late)

    def next_delay(self, operation: str, age_seconds: float, input_pixels: int | None = None) -> float:
        """As the fallback: past the first check a task is late, or its callback was lost."""
        return self._fallback().next_delay(operation, age_seconds, input_pixels)

    def record(self, operation: str, seconds: float, input_pixels: int | None = None, *,
               task_id: str | None = None) -> None:
        """A task finished: learn its duration, and whether a callback announced it."""
        now = time.monotonic()
        heard_at = self._heard.pop(task_id, None) if task_id is not None else None
        if heard_at is None:
            # found by the fallback's checks: it knows their spacing
            self._fallback().record(operation, seconds, input_pixels)
            if task_id is not None:
                self._unheard[task_id] = now
            return
        self._outcomes.append(True)
        if heard_at == _NOT_THE_END:
            self._fallback().record(operation, seconds, input_pixels)
            return
        # The service calls back when a task ends, so it ended when its callback came. Taken as the end
        # of the gap before the check the callback made due, every duration would count short and every
        # check move early: the plain schedule learns it as its own checks would have found it.
        self.base.record(operation, max(0.0, seconds - (now - heard_at)), input_pixels, ended=True)

    @staticmethod
    def backoff(attempt: int, **options: object) -> float:
        """PollSchedule.backoff."""
        return PollSchedule.backoff(attempt, **options)  # type: ignore[arg-type]
