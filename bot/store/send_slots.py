"""Each chat's send slots, shared by the replicas: Telegram's per-chat limit is the bot's, not a replica's.

The repository takes a session and never commits, like the job store's.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, text
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.models import chat_sends_table


class ChatSendRepository:
    """Each chat's next free moment to post, on the database's clock (PostgreSQL only: SQLite is one process)."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def take(self, chat_id: int, *, interval: float, burst: int) -> float:
        """Take the chat's send slot for a call going now (a burst of `burst`, then one per `interval`
        seconds): 0 when taken, else the seconds until there is room (and nothing taken)."""
        # GCRA: tat is when the chat's bucket would be empty again; a call fits while it is at most
        # burst - 1 intervals ahead, and moves it one interval on
        params = {"chat": chat_id, "interval": interval, "tolerance": (burst - 1) * interval}
        taken = (await self._session.execute(text(
            "INSERT INTO chat_sends (chat_id, tat) VALUES (:chat, extract(epoch from now()) + :interval) "
            "ON CONFLICT (chat_id) DO UPDATE SET tat = greatest(chat_sends.tat, extract(epoch from now())) + :interval "
            "WHERE chat_sends.tat - extract(epoch from now()) <= :tolerance RETURNING 1"), params)).first()
        if taken is not None:
            return 0.0
        ahead = await self._session.scalar(text(
            "SELECT tat - extract(epoch from now()) - :tolerance FROM chat_sends WHERE chat_id = :chat"), params)
        return max(0.001, float(ahead or 0.0))

    async def forget_idle(self, *, older_than: float = 120.0) -> int:
        """Forget chats whose bucket has been full for a while."""
        table = chat_sends_table
        result = await self._session.execute(delete(table).where(
            table.c.tat < func.extract("epoch", func.now()) - older_than))
        return cast(CursorResult[Any], result).rowcount


__all__ = ["ChatSendRepository"]
