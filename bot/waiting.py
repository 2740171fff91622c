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
    async def hold(self, on_lend: Callable[[], None] | None = None) -> AsyncIterator[None]:
        """Hold a slot for the block, lending it out while a send in it waits (ON_WAIT); `on_lend` is
        called as it is lent (the long-polling intake then counts the update as handled)."""
        await self._slots.acquire()
        held = True
        owner = asyncio.current_task()

        @contextlib.asynccontextmanager
        async def waiting() -> AsyncIterator[None]:
            nonlocal held
            # a task the block started inherits ON_WAIT, but the slot is not its own to lend; and
            # another send of the same block may have lent it already
            if asyncio.current_task() is not owner or not held:
                yield
                return
            held = False
            if on_lend is not None:
                on_lend()
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
