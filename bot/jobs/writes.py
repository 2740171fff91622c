"""Lease-guarded job updates from many worker steps, committed together.

A busy worker finishes dozens of steps a second, and each ends in one small UPDATE. Alone, each would
be a whole transaction (a connection, `BEGIN IMMEDIATE` on SQLite, a commit), and on SQLite every one
of them queues for the single write lock. Here the updates that arrive while a transaction is being
written wait for the next one, so under load one commit serves many steps, and when idle an update
is written at once. A step still continues only after its own change is committed, so crash safety
is exactly that of one transaction per step.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from bot.credits import ledger
from bot.store import JobRecord, JobRepository
from bot.store.db import Sessions

log = logging.getLogger(__name__)


@dataclass
class _Write:
    job_id: int
    owner: str | None
    changes: dict[str, Any]
    done: asyncio.Future[JobRecord | None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())


class JobWrites:
    """Batches `JobRepository.update` calls into shared transactions."""

    def __init__(self, sessions: Sessions) -> None:
        self._sessions = sessions
        self._waiting: list[_Write] = []
        self._writer: asyncio.Task[None] | None = None

    async def update(self, job_id: int, *, owner: str | None, **changes: Any) -> JobRecord | None:
        """Change a job if `owner` still holds its lease (None: no check), once committed; None if it does not."""
        write = _Write(job_id, owner, changes)
        self._waiting.append(write)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_all())
        # shielded: a step cancelled while waiting leaves its write in the batch, not half a transaction
        return await asyncio.shield(write.done)

    async def _write_all(self) -> None:
        """Commit batches until nothing is waiting."""
        while self._waiting:
            await asyncio.sleep(0)  # steps resumed in this same turn of the loop join the batch
            batch, self._waiting = self._waiting, []
            try:
                results = await self._commit(batch)
            except Exception:
                # one bad write must not fail the others: write each alone, so only it fails
                log.warning("a batch of %d job updates failed; writing them one by one", len(batch), exc_info=True)
                for write in batch:
                    await self._write_alone(write)
                continue
            for write, result in zip(batch, results, strict=True):
                if not write.done.done():
                    write.done.set_result(result)

    async def _commit(self, batch: list[_Write]) -> list[JobRecord | None]:
        async with self._sessions() as session, session.begin():
            jobs = JobRepository(session)
            results = [await jobs.update(write.job_id, owner=write.owner, **write.changes) for write in batch]
            # a job's final state and its charge or refund are one commit (credits never move apart from jobs)
            ended = [job for job in results if job is not None and job.is_final and job.credits > 0]
            if ended:
                await ledger.settle(session, ended, now=max(job.updated_at for job in ended))
            return results

    async def _write_alone(self, write: _Write) -> None:
        try:
            [result] = await self._commit([write])
        except Exception as error:
            if not write.done.done():
                write.done.set_exception(error)
        else:
            if not write.done.done():
                write.done.set_result(result)
