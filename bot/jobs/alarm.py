"""Telling the operator once when the service account stops working: out of credits, or the API key refused.

Every job that meets the problem fails with a clear message to its user; the admins get one message
per problem: again only after a successful call in between (it recovered and broke again), or after
`repeat_after` seconds of it going on. With replicas, the one that first claims the problem in the
store they share (`SharedClaims`: the conversation rows) tells the admins; the others stay quiet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Protocol

from bot.aiart.errors import NoCredits, Unauthorized

log = logging.getLogger(__name__)

NO_CREDITS = "no_credits"
UNAUTHORIZED = "unauthorized"
REPEAT_AFTER_S = 3600.0

#: sends the admins the message about a problem (NO_CREDITS or UNAUTHORIZED)
SendAlarm = Callable[[str], Awaitable[None]]


#: where the shared claims live (a conversation row: chat 0, this kind, the problem as key)
CLAIM_CHAT, CLAIM_KIND = 0, "service_alarm"


class SharedClaims(Protocol):
    """A store every replica sees (bot.chats.conversations.Conversations)."""

    async def first_use(self, chat_id: int, kind: str, key: str | int, *, keep_for: timedelta) -> bool:
        """Mark the key used for `keep_for`; True only for the first caller."""

    async def drop(self, chat_id: int, kind: str, key: str | int) -> bool:
        """Forget the mark."""


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
                 clock: Callable[[], float] = time.monotonic, shared: SharedClaims | None = None) -> None:
        self._send = send
        self._shared = shared
        self._repeat_after = repeat_after
        self._clock = clock
        self._raised: dict[str, float] = {}  # problem -> when the admins were last told
        self._sending: set[asyncio.Task[None]] = set()
        #: claims and their clearing reach the shared store in the order the outcomes were observed
        self._in_order = asyncio.Lock()

    def observe(self, error: BaseException | None) -> None:
        """One service call's outcome: None for a success (the account works), else its error."""
        if error is None:
            if self._raised:
                log.info("the service answers normally again")
                self._spawn(self._recovered(list(self._raised)))
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
        self._spawn(self._tell(problem))

    def _spawn(self, work: Awaitable[None]) -> None:
        async def in_order() -> None:
            async with self._in_order:
                await work

        task = asyncio.ensure_future(in_order())
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _tell(self, problem: str) -> None:
        try:
            if self._shared is not None and not await self._shared.first_use(
                    CLAIM_CHAT, CLAIM_KIND, problem, keep_for=timedelta(seconds=self._repeat_after)):
                return  # another replica told the admins about it already
            await self._send(problem)
        except Exception:  # not told: the next call that meets the problem tries again
            log.warning("could not tell the admins that the service reports %s", problem, exc_info=True)
            self._raised.pop(problem, None)
            await self._forget(problem)

    async def _recovered(self, problems: list[str]) -> None:
        """The account works again: a new breakage is news for every replica."""
        for problem in problems:
            await self._forget(problem)

    async def _forget(self, problem: str) -> None:
        if self._shared is None:
            return
        try:
            await self._shared.drop(CLAIM_CHAT, CLAIM_KIND, problem)
        except Exception:  # the claim then simply runs out after repeat_after
            log.warning("could not clear the claim on %s", problem, exc_info=True)

    async def close(self) -> None:
        """Wait for messages being sent."""
        if self._sending:
            await asyncio.gather(*self._sending, return_exceptions=True)
