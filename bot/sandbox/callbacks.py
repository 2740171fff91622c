"""The sandbox's task callbacks: POST {taskId, status, businessId, type, resultUrl, avatarResult} when a task ends.

The live service documents no retry policy, so the sandbox sends each callback once; a bot that is
down misses it, as it would the service's. Faults on demand model what the service can do to a
callback: lost (never sent), late (sent `late_s` after the task ended) and duplicated (sent twice).
"""

from __future__ import annotations

import asyncio
import logging
import random
from dataclasses import dataclass

import aiohttp

from bot.sandbox.responses import task_data
from bot.sandbox.state import SandboxTask

logger = logging.getLogger("bot.sandbox")

_FIELDS = ("taskId", "status", "businessId", "type", "resultUrl", "avatarResult")


@dataclass
class CallbackFaults:
    """Shares of callbacks lost, late (by `late_s`) and duplicated; off by default."""

    lost: float = 0.0
    late: float = 0.0
    late_s: float = 2.0
    duplicated: float = 0.0
    seed: int | None = None

    def __post_init__(self) -> None:
        for name in ("lost", "late", "duplicated"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"callback fault share {name} must be between 0 and 1")
        if self.late_s < 0:
            raise ValueError("late_s must not be negative")


class CallbackSender:
    """Sends each ended task's callback to a URL, with the configured faults."""

    def __init__(self, url: str, faults: CallbackFaults) -> None:
        self.url = url
        self._faults = faults
        self._rng = random.Random(faults.seed)
        self._session: aiohttp.ClientSession | None = None
        self._sending: set[asyncio.Task[None]] = set()
        #: what happened to each callback: "sent", "lost", "failed" (by taskId, in order)
        self.log: list[tuple[str, str]] = []

    def task_ended(self, task: SandboxTask) -> None:
        """Schedule the callback of a task that just reached status 1 or 2."""
        if self._rng.random() < self._faults.lost:
            self.log.append((task.task_id, "lost"))
            return
        delay = self._faults.late_s if self._rng.random() < self._faults.late else 0.0
        copies = 2 if self._rng.random() < self._faults.duplicated else 1
        body = {name: value for name, value in task_data(task).items() if name in _FIELDS}
        job = asyncio.ensure_future(self._send(task.task_id, body, delay, copies))
        self._sending.add(job)
        job.add_done_callback(self._sending.discard)

    async def _send(self, task_id: str, body: dict[str, object], delay: float, copies: int) -> None:
        if delay:
            await asyncio.sleep(delay)
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        for _ in range(copies):
            try:
                async with self._session.post(self.url, json=body) as response:
                    await response.read()
                    self.log.append((task_id, "sent" if response.status < 300 else f"failed {response.status}"))
            except (aiohttp.ClientError, TimeoutError) as error:
                self.log.append((task_id, "failed"))
                logger.info("sandbox callback for task %s failed: %s", task_id, type(error).__name__)

    async def close(self) -> None:
        """Cancel callbacks not yet sent and close the connections."""
        jobs = list(self._sending)
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)
        if self._session is not None:
            await self._session.close()
