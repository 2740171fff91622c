"""`python -m bot`, plus the two settings bot/runtime.py does not pass on yet: the poll policy and the flood limiter.

POLL_POLICY / POLL_TIME_SCALE choose the worker's PollSchedule and TELEGRAM_RATE_LIMIT switches the
bot's own flood limiter; both are Settings fields. Until run_bot hands them to Worker and
build_application itself, this entry point fills in exactly those keyword arguments (and only when
run_bot has not), then runs the unchanged `python -m bot`.

With a time scale below 1 the worker's idle sleep (the longest it sleeps before looking for due
work again) is scaled too: a check 2 s away in a real run is 0.2 s away at scale 0.1, and an
unscaled 1 s idle sleep would make the bot look up to 10 (scaled) seconds late, which it never is
at full scale.
"""

from __future__ import annotations

import dataclasses
import functools
import sys
from collections.abc import Callable
from typing import Any

import bot.runtime
from bot.__main__ import main
from bot.config import Settings
from bot.jobs.polling import PollSchedule


def _with_defaults(factory: Callable[..., Any], **defaults: Any) -> Callable[..., Any]:
    @functools.wraps(factory)
    def build(*args: Any, **kwargs: Any) -> Any:
        for name, value in defaults.items():
            kwargs.setdefault(name, value)
        return factory(*args, **kwargs)
    return build


def _scaled_idle_sleep(factory: Callable[..., Any], scale: float) -> Callable[..., Any]:
    @functools.wraps(factory)
    def build(*args: Any, **kwargs: Any) -> Any:
        config = kwargs["config"]
        kwargs["config"] = dataclasses.replace(config, idle_sleep=config.idle_sleep * scale)
        return factory(*args, **kwargs)
    return build


def wire(settings: Settings) -> None:
    """Make run_bot use the configured poll schedule and flood-limiter switch."""
    schedule = PollSchedule.for_policy(settings.poll_policy, time_scale=settings.poll_time_scale)
    worker = _with_defaults(bot.runtime.Worker, schedule=schedule)
    if settings.poll_time_scale != 1.0:
        worker = _scaled_idle_sleep(worker, settings.poll_time_scale)
    bot.runtime.Worker = worker
    bot.runtime.build_application = _with_defaults(bot.runtime.build_application,
                                                   rate_limit=settings.telegram_rate_limit)


if __name__ == "__main__":
    wire(Settings())
    sys.exit(main())
