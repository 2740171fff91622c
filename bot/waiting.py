"""Slots shared by all chats, given back while their holder waits on one chat's flood limit.

A send that must wait for its chat's budget (about one message a second in a private chat) runs
inside ON_WAIT's context manager when its task set one, so a chat with many results queued holds
none of the slots that other chats' results need meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar

#: set by the caller's task: what to hold while a call waits for its chat's budget
ON_WAIT: ContextVar[Callable[[], AbstractAsyncContextManager[None]] | None] = ContextVar("ON_WAIT", default=None)


class LendingSlots:
    """A semaphore whose holder lends its slot to others while it waits on a chat's flood limit."""

    def __init__(self, count: int) -> None:
        self._slots = asyncio.Semaphore(count)

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        """Hold a slot for the block, lending it out while a send in it waits (ON_WAIT)."""
        await self._slots.acquire()
        held = True

        @contextlib.asynccontextmanager
        async def waiting() -> AsyncIterator[None]:
            nonlocal held
            if not held:  # another send of the same block lent the slot already
                yield
                return
            held = False
            self._slots.release()
            try:
                yield
            finally:
                await self._slots.acquire()  # cancelled here, the slot stays given back: nothing to release
                held = True

        token = ON_WAIT.set(waiting)
        try:
            yield
        finally:
            ON_WAIT.reset(token)
            if held:
                self._slots.release()
