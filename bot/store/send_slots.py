"""Each chat's send slots, shared by the replicas: Telegram's per-chat limit is the bot's, not a replica's.

Telegram counts a call at some moment between its sending and its answer, so the slots are worked out as
the in-process limiter's (`bot.tg.ratelimit.TokenBucket`): a call is spaced from the answers of the calls
before it, and waits while the one `burst` places before it is still on the wire. A call spaced from
when the earlier one was taken would lose, to Telegram, whatever time that one spent on the wire.

The repository takes a session and never commits, like the job store's.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import CursorResult, delete, func, text
from sqlalchemy.ext.asyncio import AsyncConnection

from bot.store.models import chat_sends_table

#: how often a call waiting for another replica's call in the chat to be answered asks again
FLIGHT_POLL_S = 0.1

_NOW = "extract(epoch from now())"


class ChatSendRepository:
    """Each chat's next free moment to post, on the database's clock (PostgreSQL only: SQLite is one process)."""

    def __init__(self, session: AsyncConnection) -> None:
        self._session = session

    async def take(self, chat_id: int, *, interval: float, burst: int, stale: float) -> tuple[float, int]:
        """Take the chat's send slot for a call going now (a burst of `burst`, then one per `interval` seconds
        after the answers): (0, the call's number) when taken, else (the seconds until there is room, 0) and
        nothing taken. A call still unanswered `stale` seconds after the chat's last one was taken is let go."""
        # GCRA: tat is when the chat's bucket would be empty again; a call fits while it is at most burst - 1
        # intervals ahead and the call `burst` places before it has been answered, and moves it one interval on
        params = {"chat": chat_id, "interval": interval, "tolerance": (burst - 1) * interval,
                  "mask": (1 << burst) - 1, "oldest": 1 << (burst - 1), "stale": stale}
        taken = (await self._session.execute(text(
            f"INSERT INTO chat_sends (chat_id, tat, taken, flying) VALUES (:chat, {_NOW} + :interval, 1, 1) "
            f"ON CONFLICT (chat_id) DO UPDATE SET tat = greatest(chat_sends.tat, {_NOW}) + :interval, "
            "taken = chat_sends.taken + 1, flying = ((chat_sends.flying << 1) | 1) & :mask "
            f"WHERE chat_sends.tat - {_NOW} <= :tolerance "
            f"AND (chat_sends.flying & :oldest = 0 OR {_NOW} - chat_sends.tat > :stale) "
            "RETURNING chat_sends.taken"), params)).scalar()
        if taken is not None:
            return 0.0, int(taken)
        ahead = await self._session.scalar(text(
            f"SELECT tat - {_NOW} - :tolerance FROM chat_sends WHERE chat_id = :chat"), params)
        # no room before tat, or none until the call `burst` places back is answered (no telling when)
        ahead = float(ahead or 0.0)
        return (ahead if ahead > 0 else FLIGHT_POLL_S), 0

    async def answered(self, chat_id: int, call: int, *, interval: float, burst: int) -> None:
        """Call number `call` came back now: the calls after it are spaced from this moment."""
        # one interval on from now for it and for each call taken after it (their own intervals, counted from
        # when they were taken, may have run out already)
        await self._session.execute(text(
            f"UPDATE chat_sends SET tat = greatest(tat, {_NOW} + (taken - :call + 1) * :interval), "
            "flying = CASE WHEN taken - :call < :burst THEN flying & ~(1 << CAST(taken - :call AS integer)) "
            "ELSE flying END "
            "WHERE chat_id = :chat AND taken >= :call"),
            {"chat": chat_id, "call": call, "interval": interval, "burst": burst})

    async def forget_idle(self, *, older_than: float = 120.0) -> int:
        """Forget chats whose bucket has been full for a while."""
        table = chat_sends_table
        result = await self._session.execute(delete(table).where(
            table.c.tat < func.extract("epoch", func.now()) - older_than))
        return cast(CursorResult[Any], result).rowcount


__all__ = ["ChatSendRepository"]
