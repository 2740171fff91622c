"""Conversation state in the database, so the next message of a conversation may land on any replica.

Each call is one short transaction. What a handler changes in place (an album gaining an item) is a
locked read-modify-write, so two replicas (or a replica and the album sweeper) never lose an item.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from bot.clock import utcnow
from bot.store.conversations import ConversationRepository, ConversationRow
from bot.store.db import Sessions, reading


class Conversations:
    """Read and write conversation state by (chat, kind, key); rows expire on their own."""

    def __init__(self, sessions: Sessions, clock: Callable[[], datetime] = utcnow) -> None:
        self._sessions = sessions
        self._clock = clock

    async def get(self, chat_id: int, kind: str, key: str | int) -> dict[str, Any] | None:
        """The row's data, or None."""
        async with reading(self._sessions) as session:
            row = await ConversationRepository(session).get(chat_id, kind, str(key), now=self._clock())
        return None if row is None else row.data

    async def put(self, chat_id: int, kind: str, key: str | int, data: dict[str, Any], *, keep_for: timedelta,
                  due_in: float | None = None) -> None:
        """Store (or replace) the row; `due_in` seconds makes it due for `take_due`."""
        now = self._clock()
        due = None if due_in is None else now + timedelta(seconds=due_in)
        async with self._sessions() as session, session.begin():
            await ConversationRepository(session).put(chat_id, kind, str(key), data, expires_at=now + keep_for,
                                                      due_at=due)

    async def change(self, chat_id: int, kind: str, key: str | int,
                     edit: Callable[[dict[str, Any]], dict[str, Any] | None], *, keep_for: timedelta,
                     due_in: float | None = None) -> dict[str, Any] | None:
        """Edit the live row under a lock (`edit` returns the new data, or None to delete it); the data
        before the edit, or None when there was no row (then nothing is written)."""
        now = self._clock()
        async with self._sessions() as session, session.begin():
            repository = ConversationRepository(session)
            row = await repository.get(chat_id, kind, str(key), now=now, lock=True)
            if row is None:
                return None
            new = edit(dict(row.data))
            if new is None:
                await repository.delete(chat_id, kind, str(key))
            else:
                due = None if due_in is None else now + timedelta(seconds=due_in)
                await repository.put(chat_id, kind, str(key), new, expires_at=now + keep_for, due_at=due)
            return row.data

    async def pop(self, chat_id: int, kind: str, key: str | int) -> dict[str, Any] | None:
        """Remove the live row and return its data (None when there was none)."""
        return await self.change(chat_id, kind, key, lambda data: None, keep_for=timedelta())

    async def drop(self, chat_id: int, kind: str, key: str | int) -> bool:
        """Remove the row, live or not; True when there was one."""
        async with self._sessions() as session, session.begin():
            return await ConversationRepository(session).delete(chat_id, kind, str(key))

    async def first_use(self, chat_id: int, kind: str, key: str | int, *, keep_for: timedelta,
                        data: dict[str, Any] | None = None) -> bool:
        """Mark the key used (keeping `data` with the mark); True only for the first caller (across replicas)."""
        now = self._clock()
        async with self._sessions() as session, session.begin():
            return await ConversationRepository(session).add_if_absent(chat_id, kind, str(key), now=now,
                                                                       expires_at=now + keep_for, data=data or {})

    async def take_due(self, kind: str) -> list[ConversationRow]:
        """Remove and return the rows of this kind whose due time has come."""
        async with self._sessions() as session, session.begin():
            return await ConversationRepository(session).take_due(kind, now=self._clock())

    async def cleanup(self) -> int:
        """Forget expired rows."""
        async with self._sessions() as session, session.begin():
            return await ConversationRepository(session).delete_expired(now=self._clock())
