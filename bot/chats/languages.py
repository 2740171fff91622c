"""The languages people and groups chose with /language (stored as their preferences)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.clock import utcnow
from bot.store import ChatRepository, Preferences, UserRepository
from bot.store.db import Sessions, reading


@dataclass(frozen=True)
class ChosenLanguages:
    """What a group and a person chose (None: not chosen; a group then follows each person, a person Telegram)."""

    chat: str | None = None
    user: str | None = None
    #: the person's other settings, read with their language: an update needs that row only once
    user_settings: dict[str, Any] = field(default_factory=dict)


class LanguageChoices:
    """Reads and stores language choices for the chat side."""

    def __init__(self, sessions: Sessions, *,
                 clock: Callable[[], datetime] = utcnow) -> None:
        self._sessions = sessions
        self._clock = clock

    async def chosen(self, *, chat_id: int | None, user_id: int | None) -> ChosenLanguages:
        """The group's choice (when `chat_id` is given) and the person's (with their settings), in one session."""
        async with reading(self._sessions) as session:
            chat = (await ChatRepository(session).preferences(chat_id)).language if chat_id is not None else None
            user = await UserRepository(session).preferences(user_id) if user_id is not None else Preferences()
        return ChosenLanguages(chat, user.language, user.settings)

    async def choose_for_user(self, user_id: int, language: str | None) -> None:
        """Set the person's language (None: follow their Telegram app)."""
        async with self._sessions() as session, session.begin():
            await UserRepository(session).set_preferences(user_id, now=self._clock(), language=language)

    async def choose_for_chat(self, chat_id: int, *, type: str, title: str | None, language: str | None) -> None:
        """Set a group's language for everyone in it (None: each person's own)."""
        async with self._sessions() as session, session.begin():
            await ChatRepository(session).set_preferences(chat_id, type=type, title=title, now=self._clock(),
                                                          language=language)
