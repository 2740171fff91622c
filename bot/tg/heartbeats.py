"""Each replica's heartbeat: it says it is alive and takes its share of Telegram's budget (the bot's, split
between the replicas alive), with each chat's send slots shared through the database."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from datetime import UTC, datetime, timedelta

from bot.store.db import Sessions
from bot.store.heartbeats import ReplicaRepository
from bot.store.send_slots import ChatSendRepository
from bot.tg.ratelimit import TelegramRateLimiter, is_group_chat

log = logging.getLogger(__name__)

#: how often a replica says it is alive (and re-reads how many are)
HEARTBEAT_S = 1.0
#: a replica not heard from for this long is counted as gone
GONE_AFTER_S = 4.0
#: how late a busy replica's heartbeat may come (its loop also sweeps albums, its database may be slow)
BEAT_LAG_S = 1.0
#: a replica not heard from for this long is taken off the list (it died without leaving)
FORGOTTEN_AFTER = timedelta(minutes=10)
#: spacing of posts in one chat across replicas, counted from the answers: private chats a burst of 3 then
#: about 1 a second, groups 20 a minute (with a margin for Telegram's "about")
PRIVATE_INTERVAL_S, PRIVATE_BURST = 1.1, 3
GROUP_INTERVAL_S, GROUP_BURST = 3.2, 1
#: a call still unanswered this long after the chat's last one was taken no longer holds up the chat's next
#: ones: its replica may have died with it on the wire (or stopped waiting), and the chat must not wait for
#: good; a longer upload than this is spaced from its taking, as every call was before answers were shared
CALL_AT_MOST_S = 5.0


def replica_id(worker: str) -> str:
    """This process's name among the replicas (its worker id and process id)."""
    return f"{worker}:{os.getpid()}"


class Heartbeat:
    """One replica's place among the replicas: its beats, its share of the budget, its leaving."""

    def __init__(self, sessions: Sessions, *, replica: str, limiter: TelegramRateLimiter | None,
                 shared: bool) -> None:
        self._sessions = sessions
        self._replica = replica
        self._limiter = limiter
        self._shared = shared  # PostgreSQL: other replicas may be there
        #: the loop time of the last heartbeat the database took; None until the first, and again once the
        #: others may have counted this replica gone (its next beat joins them anew)
        self._heard_at: float | None = None
        self.replicas = 1
        self._slots = SharedChatSlots(sessions)

    async def beat(self) -> int:
        """Say this replica is alive and take its share of the budget; how many replicas are alive."""
        if not self._shared:
            return 1
        # on the database's clock: replicas on hosts whose clocks differ by seconds still count each other
        async with self._sessions() as session, session.begin():
            repository = ReplicaRepository(session)
            await repository.beat(self._replica)
            alive = await repository.alive(within=GONE_AFTER_S)
        if alive != self.replicas:
            log.info("%d replica(s) alive", alive)
        joined = self._heard_at is None
        self._heard_at = asyncio.get_running_loop().time()
        self.replicas = alive
        if self._limiter is not None:
            # the chats' budgets are shared even while alone: a replica that joins sees what this one sent
            self._limiter.share(alive, self._slots)
            if joined and alive > 1:
                self._limiter.join(others_within=HEARTBEAT_S + BEAT_LAG_S)
        return alive

    async def keep_heard(self) -> None:
        """Beat; when beats fail until the others may count this replica gone (and take its share of the
        budget), send at a trickle until the database takes a beat again, then rejoin as a newcomer does."""
        try:
            # a beat slower than this is as good as lost: the others stop counting this replica soon after
            await asyncio.wait_for(self.beat(), GONE_AFTER_S - BEAT_LAG_S)
        except Exception:
            now = asyncio.get_running_loop().time()
            if self._limiter is not None and self._heard_at is not None and now - self._heard_at >= GONE_AFTER_S - BEAT_LAG_S:
                self._limiter.step_back()
                self._heard_at = None
            raise

    async def forget_gone(self) -> None:
        """Take replicas that died without leaving off the list (their rows would otherwise stay for good)."""
        if self._shared:
            async with self._sessions() as session, session.begin():
                await ReplicaRepository(session).forget(before=datetime.now(UTC) - FORGOTTEN_AFTER)

    async def leave(self) -> None:
        """Leave the list of replicas (stopping: the others take this one's share of the budget)."""
        if not self._shared:
            return
        with contextlib.suppress(Exception):
            async with self._sessions() as session, session.begin():
                await ReplicaRepository(session).forget(self._replica)


class SharedChatSlots:
    """Each chat's send slots in the database, taken for a call going now and given back with its answer."""

    def __init__(self, sessions: Sessions) -> None:
        self._sessions = sessions

    async def take(self, chat_id: object) -> tuple[float, int]:
        """(0, the call's number) when the chat has room for a call now, else (the seconds until it has, 0)."""
        interval, burst = _spacing(chat_id)
        async with self._sessions() as session, session.begin():
            return await ChatSendRepository(session).take(int(str(chat_id)), interval=interval, burst=burst,
                                                          stale=CALL_AT_MOST_S)

    async def answered(self, chat_id: object, call: int) -> None:
        """The call taken as number `call` came back: the chat's next calls are spaced from now."""
        interval, burst = _spacing(chat_id)
        async with self._sessions() as session, session.begin():
            await ChatSendRepository(session).answered(int(str(chat_id)), call, interval=interval, burst=burst)


def _spacing(chat_id: object) -> tuple[float, int]:
    return (GROUP_INTERVAL_S, GROUP_BURST) if is_group_chat(chat_id) else (PRIVATE_INTERVAL_S, PRIVATE_BURST)
