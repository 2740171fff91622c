"""Telling the operator once when the service account stops working: out of credits, or the API key refused.

Every job that meets the problem fails with a clear message to its user; the admins get one message
per problem: again only after a successful call in between (it recovered and broke again), or after
`repeat_after` seconds of it going on. This is one process's memory: with replicas, each may send one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from bot.aiart.errors import NoCredits, Unauthorized

log = logging.getLogger(__name__)

NO_CREDITS = "no_credits"
UNAUTHORIZED = "unauthorized"
REPEAT_AFTER_S = 3600.0

#: sends the admins the message about a problem (NO_CREDITS or UNAUTHORIZED)
SendAlarm = Callable[[str], Awaitable[None]]


def problem_of(error: BaseException | None) -> str | None:
    """The account problem an error shows, if any."""
    if isinstance(error, NoCredits):
        return NO_CREDITS
    if isinstance(error, Unauthorized):
        return UNAUTHORIZED
    return None


class ServiceAlarm:
    """Watches service call outcomes and sends the admins one message per problem."""

    def __init__(self, send: SendAlarm, *, repeat_after: float = REPEAT_AFTER_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._send = send
        self._repeat_after = repeat_after
        self._clock = clock
        self._raised: dict[str, float] = {}  # problem -> when the admins were last told
        self._sending: set[asyncio.Task[None]] = set()

    def observe(self, error: BaseException | None) -> None:
        """One service call's outcome: None for a success (the account works), else its error."""
        if error is None:
            if self._raised:
                log.info("the service answers normally again")
                self._raised.clear()
            return
        problem = problem_of(error)
        if problem is None:
            return  # a timeout or a 5xx says nothing about the account
        now = self._clock()
        last = self._raised.get(problem)
        if last is not None and now - last < self._repeat_after:
            return
        self._raised[problem] = now
        task = asyncio.create_task(self._tell(problem))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _tell(self, problem: str) -> None:
        try:
            await self._send(problem)
        except Exception:  # not told: the next call that meets the problem tries again
            log.warning("could not tell the admins that the service reports %s", problem, exc_info=True)
            self._raised.pop(problem, None)

    async def close(self) -> None:
        """Wait for messages being sent."""
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
