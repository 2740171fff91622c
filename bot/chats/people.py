"""What the chat side asks about people: their settings, a group's settings, their recent jobs.

Settings live in users.settings and chats.settings by name (SETTING_* below); nothing is kept in
process memory, so every replica reads the same answers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from bot.clock import utcnow
from bot.store import ChatRepository, JobRecord, JobRepository, UserRepository
from bot.store.db import Sessions, reading


def argument_setting(operation: str) -> str:
    """The name of the setting holding a person's default argument text for an operation ("<name>_default"),
    one of its catalogue entry's `default_choices` (older rows may hold it as a number)."""
    return f"{operation}_default"


#: "reaction" (default) or "status": how a quick job is acknowledged
QUICK_ACK = "quick_ack"
#: a group's: whether anyone (True) or only the job's owner (default) may press a result's buttons
FOLLOWUPS_EVERYONE = "followups_everyone"


def style_setting(group: str) -> str:
    """The name of the default-style setting of a style group ("style_art", ...)."""
    return f"style_{group}"


class PeopleService:
    """Settings and history for the chat side; each call is one short transaction."""

    def __init__(self, sessions: Sessions,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self._sessions = sessions
        self._clock = clock

    async def job(self, job_id: int) -> JobRecord | None:
        """A stored job (a follow-up button or a history entry names it)."""
        async with reading(self._sessions) as session:
            return await JobRepository(session).get(job_id)

    async def recent(self, chat_id: int, user_id: int, *, limit: int = 10) -> list[JobRecord]:
        """The user's latest jobs in this chat, newest first."""
        async with reading(self._sessions) as session:
            return await JobRepository(session).recent_for_user(chat_id, user_id, limit=limit)

    async def delivered(self, user_id: int, *, limit: int = 60) -> list[JobRecord]:
        """The user's delivered jobs in every chat, newest first."""
        async with reading(self._sessions) as session:
            return await JobRepository(session).delivered_for_user(user_id, limit=limit)

    async def user_settings(self, user_id: int | None) -> dict[str, Any]:
        """A user's settings by name (empty when none were chosen)."""
        if user_id is None:
            return {}
        async with reading(self._sessions) as session:
            return (await UserRepository(session).preferences(user_id)).settings

    async def chat_settings(self, chat_id: int) -> dict[str, Any]:
        """A chat's settings by name."""
        async with reading(self._sessions) as session:
            return (await ChatRepository(session).preferences(chat_id)).settings

    async def set_user(self, user_id: int, **settings: Any) -> dict[str, Any]:
        """Change some of a user's settings; returns them all."""
        async with self._sessions() as session, session.begin():
            return (await UserRepository(session).set_preferences(user_id, now=self._clock(), **settings)).settings

    async def set_chat(self, chat_id: int, *, type: str, title: str | None, **settings: Any) -> dict[str, Any]:
        """Change some of a chat's settings; returns them all."""
        async with self._sessions() as session, session.begin():
            chats = ChatRepository(session)
            return (await chats.set_preferences(chat_id, type=type, title=title, now=self._clock(),
                                                **settings)).settings

    @staticmethod
    def quick_reaction(settings: dict[str, Any]) -> bool:
        """Whether a person with these settings gets a reaction for a quick job (else a status message)."""
        return settings.get(QUICK_ACK, "reaction") != "status"
