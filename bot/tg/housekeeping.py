"""What each replica does in the background for all of them: beat, finish the albums whose items stopped
coming (its own or another replica's), and delete expired conversation state and idle send slots."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from telegram.ext import Application

from bot.store.db import Sessions
from bot.store.send_slots import ChatSendRepository
from bot.tg.albums import queue_due_albums
from bot.tg.heartbeats import HEARTBEAT_S, Heartbeat

log = logging.getLogger(__name__)

#: how often due albums are looked for (an album's own handler queues it on time; this is the fallback)
ALBUM_SWEEP_S = 0.5
#: how often expired conversation state is deleted
CLEANUP_S = 60.0


class Housekeeping:
    """Heartbeat, album sweep and cleanup for one replica, until it stops."""

    def __init__(self, application: Application, sessions: Sessions, heartbeat: Heartbeat, *, shared: bool) -> None:
        self._application = application
        self._sessions = sessions
        self._heartbeat = heartbeat
        self._shared = shared  # PostgreSQL: send slots and heartbeats are kept in the database

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop`: beat, sweep albums, clean up; then leave the replica list."""
        loop = asyncio.get_running_loop()
        next_beat = next_cleanup = loop.time()
        while not stop.is_set():
            now = loop.time()
            try:
                if now >= next_beat:
                    next_beat = now + HEARTBEAT_S
                    await self._heartbeat.keep_heard()
                await queue_due_albums(self._application)
                if now >= next_cleanup:
                    next_cleanup = now + CLEANUP_S
                    await self._cleanup()
            except Exception:  # the database may be away for a moment: keep going
                log.warning("replica housekeeping failed", exc_info=True)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), ALBUM_SWEEP_S)
        await self._heartbeat.leave()

    async def _cleanup(self) -> None:
        await self._application.bot_data.deps.conversations.cleanup()
        if self._shared:
            async with self._sessions() as session, session.begin():
                await ChatSendRepository(session).forget_idle()
            await self._heartbeat.forget_gone()
