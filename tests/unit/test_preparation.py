"""Input preparation is bounded: slots and a pixel budget, in worker threads, in order, safe under cancellation."""

from __future__ import annotations

import asyncio
import threading

import pytest

import bot.images
from bot.images import DEFAULT_LIMITS, ImageRejected, PreparationSlots, PreparedImage
from tests.fakes import samples

SMALL = samples.png(32, 32)  # 1,024 pixels
LARGE = samples.png(64, 64)  # 4,096 pixels


class HeldPreparation:
    """Stands in for `prepare` in its worker thread: records who runs at once, finishes when released."""

    def __init__(self) -> None:
        self.running: list[int] = []
        self.started: list[int] = []
        self.most = 0
        self.lock = threading.Lock()
        self.release = threading.Event()

    def __call__(self, data: bytes, limits: object) -> PreparedImage:
        with self.lock:
            self.running.append(len(data))
            self.started.append(len(data))
            self.most = max(self.most, len(self.running))
        self.release.wait(10)
        with self.lock:
            self.running.remove(len(data))
        return PreparedImage(data=data, mime="image/png", width=1, height=1, format="PNG")


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> HeldPreparation:
    fake = HeldPreparation()
    monkeypatch.setattr(bot.images, "prepare", fake)
    return fake


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


async def test_at_most_concurrency_preparations_run_at_once(held: HeldPreparation):
    slots = PreparationSlots(concurrency=2, max_pixels=1_000_000)
    work = [asyncio.create_task(slots.prepare(SMALL)) for _ in range(6)]
    await settle()
    assert len(held.running) == 2 and slots.running == 2
    held.release.set()
    assert len(await asyncio.gather(*work)) == 6
    assert held.most == 2 and slots.running == 0


async def test_the_pixel_budget_keeps_large_images_apart_and_lets_small_ones_share(held: HeldPreparation):
    slots = PreparationSlots(concurrency=4, max_pixels=5_000)
    large = [asyncio.create_task(slots.prepare(LARGE)) for _ in range(2)]
    await settle()
    assert held.running == [len(LARGE)]  # 4,096 + 4,096 is over the budget
    held.release.set()
    await asyncio.gather(*large)
    held.release.clear()
    small = [asyncio.create_task(slots.prepare(SMALL)) for _ in range(4)]
    await settle()
    assert len(held.running) == 4  # 4 x 1,024 fits
    held.release.set()
    await asyncio.gather(*small)


async def test_an_image_larger_than_the_whole_budget_runs_alone(held: HeldPreparation):
    slots = PreparationSlots(concurrency=2, max_pixels=100)
    work = [asyncio.create_task(slots.prepare(LARGE)) for _ in range(2)]
    await settle()
    assert len(held.running) == 1
    held.release.set()
    await asyncio.gather(*work)


async def test_waiters_are_served_in_order(held: HeldPreparation):
    slots = PreparationSlots(concurrency=4, max_pixels=5_000)
    first = asyncio.create_task(slots.prepare(SMALL))
    await settle()
    large = asyncio.create_task(slots.prepare(LARGE))  # must wait for the small one
    await settle()
    later = [asyncio.create_task(slots.prepare(SMALL)) for _ in range(3)]  # would fit, but come after
    await settle()
    assert held.started == [len(SMALL)]
    held.release.set()
    await asyncio.gather(first, large, *later)
    assert held.started[:2] == [len(SMALL), len(LARGE)]


async def test_bad_input_is_refused_at_once_without_waiting(held: HeldPreparation):
    slots = PreparationSlots(concurrency=1)
    busy = asyncio.create_task(slots.prepare(SMALL))
    await settle()
    with pytest.raises(ImageRejected):
        await asyncio.wait_for(slots.prepare(samples.svg()), 1)
    held.release.set()
    await busy


async def test_a_cancelled_caller_keeps_its_slot_until_its_thread_is_done(held: HeldPreparation):
    slots = PreparationSlots(concurrency=1)
    first = asyncio.create_task(slots.prepare(SMALL))
    await settle()
    waiting = asyncio.create_task(slots.prepare(SMALL))
    first.cancel()
    await settle()
    assert slots.running == 1 and len(held.running) == 1  # the thread still holds the memory
    waiting_too = asyncio.create_task(slots.prepare(SMALL))
    waiting.cancel()  # a cancelled waiter gives up its place
    held.release.set()
    assert (await waiting_too).data == SMALL
    assert slots.running == 0 and first.cancelled()


async def test_real_preparation_runs_off_the_event_loop(monkeypatch: pytest.MonkeyPatch):
    slots = PreparationSlots()
    loop_thread = threading.get_ident()
    seen: list[int] = []
    original = bot.images.prepare

    def spy(*args):
        seen.append(threading.get_ident())
        return original(*args)

    monkeypatch.setattr(bot.images, "prepare", spy)
    prepared = await slots.prepare(samples.jpeg(64, 48), DEFAULT_LIMITS)
    assert prepared.format == "JPEG" and seen and seen[0] != loop_thread
