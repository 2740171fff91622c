"""Delivery slots lent out while a send waits on its chat's flood limit, and never counted twice."""

import asyncio

import pytest

from bot.waiting import ON_WAIT, LendingSlots


async def _wait_on_chat(release: asyncio.Event) -> None:
    """What the rate limiter does for a send over its chat's budget: wait inside ON_WAIT."""
    on_wait = ON_WAIT.get()
    assert on_wait is not None
    async with on_wait():
        await release.wait()


async def test_a_send_waiting_on_its_chat_lends_its_slot_to_another_chat():
    slots = LendingSlots(1)
    busy_chat_may_send = asyncio.Event()
    other_chat_sent = asyncio.Event()

    async def busy_chat() -> None:
        async with slots.hold():
            await _wait_on_chat(busy_chat_may_send)

    async def other_chat() -> None:
        async with slots.hold():
            other_chat_sent.set()

    waiting = asyncio.create_task(busy_chat())
    await asyncio.sleep(0)
    await asyncio.wait_for(other_chat(), 1)
    assert other_chat_sent.is_set() and not waiting.done()
    busy_chat_may_send.set()
    await asyncio.wait_for(waiting, 1)
    assert ON_WAIT.get() is None  # nothing leaks into the caller's context


async def test_the_slot_is_taken_back_before_the_send_goes_on():
    slots = LendingSlots(1)
    release = asyncio.Event()
    order: list[str] = []

    async def waiter() -> None:
        async with slots.hold():
            await _wait_on_chat(release)
            order.append("waiter sends")

    async def borrower() -> None:
        async with slots.hold():
            release.set()
            await asyncio.sleep(0.05)  # the waiter may not go on while this holds the only slot
            order.append("borrower done")

    task = asyncio.create_task(waiter())
    await asyncio.sleep(0)
    await asyncio.wait_for(asyncio.gather(borrower(), task), 1)
    assert order == ["borrower done", "waiter sends"]


@pytest.mark.parametrize("cancel_while", ["waiting", "taking the slot back"])
async def test_cancelling_a_holder_gives_back_exactly_its_slot(cancel_while):
    slots = LendingSlots(2)
    release = asyncio.Event()

    async def holder() -> None:
        async with slots.hold():
            await _wait_on_chat(release)

    async def other() -> None:
        async with slots.hold():
            await asyncio.sleep(3600)

    task = asyncio.create_task(holder())
    await asyncio.sleep(0)
    others = [asyncio.create_task(other()) for _ in range(2)] if cancel_while == "taking the slot back" else []
    await asyncio.sleep(0)
    release.set()
    await asyncio.sleep(0)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    for blocker in others:
        blocker.cancel()
    await asyncio.gather(*others, return_exceptions=True)
    # exactly two slots again: two holders get in at once, a third does not
    async with slots.hold(), slots.hold():
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(slots.hold().__aenter__(), 0.05)
