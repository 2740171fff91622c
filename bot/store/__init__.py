"""The durable job store: SQLAlchemy models, engine and sessions, migrations, and repositories."""

from __future__ import annotations

from bot.store.db import create_engine, migrate, session_factory
from bot.store.records import ACTIVE_STATES, FINAL_STATES, JobRecord, JobState, NewJob, Preferences
from bot.store.repositories import ChatRepository, JobRepository, UserRepository

__all__ = [
    "ACTIVE_STATES",
    "FINAL_STATES",
    "ChatRepository",
    "JobRecord",
    "JobRepository",
    "JobState",
    "NewJob",
    "Preferences",
    "UserRepository",
    "create_engine",
    "migrate",
    "session_factory",
]
