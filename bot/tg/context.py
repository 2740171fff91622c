"""What handlers share: the services they call, kept in the application's bot_data."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from telegram.ext import ContextTypes

from bot.aiart import AiartClient
from bot.jobs.service import JobService
from bot.operations.catalogue import Operation
from bot.operations.styles import StyleCatalogue

DEPS_KEY = "deps"


@dataclass(frozen=True)
class Access:
    """Who may use the bot (empty allowlists allow everyone) and who administers it."""

    admins: frozenset[int] = frozenset()
    allowed_users: frozenset[int] = frozenset()
    allowed_chats: frozenset[int] = frozenset()

    def allows(self, user_id: int | None, chat_id: int | None) -> bool:
        if user_id is not None and user_id in self.admins:
            return True
        if self.allowed_users and user_id not in self.allowed_users:
            return False
        return not (self.allowed_chats and chat_id not in self.allowed_chats and user_id not in self.allowed_users)


@dataclass(frozen=True)
class Deps:
    """The handlers' dependencies."""

    jobs: JobService
    operations: dict[str, Operation]
    styles: StyleCatalogue
    client: AiartClient
    access: Access = Access()
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)


def deps(context: ContextTypes.DEFAULT_TYPE) -> Deps:
    """The dependencies stored at start-up."""
    return context.application.bot_data[DEPS_KEY]
