"""Input images that came from the Mini App rather than from a chat (a painted mask), kept in the database.

A job's inputs are Telegram file ids, except these: `app:<key>`, which no file id can look like (file ids
have no colon). The bytes sit in the conversations table (as BASE64, under the person's id), so any replica's
worker finds them, and they expire after a week, as a result's "again" button would still want them.

They are written in the transaction that stores their job (`write`, called by JobService), so a request
the job system refuses (credits, limits) leaves nothing behind; and a person keeps at most `MOST_KEPT` of
them, the oldest forgotten first, so no one can fill the disk with their own masks.
"""

from __future__ import annotations

import base64
import secrets
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from bot.chats.conversations import Conversations
from bot.store.conversations import ConversationRepository

PREFIX = "app:"
KIND = "app_input"
KEPT_FOR = timedelta(days=7)
#: stored inputs a person keeps at once: far more than the jobs they may have running (their "again" buttons
#: want them too), far fewer than would weigh on the database
MOST_KEPT = 20


def is_stored(reference: str) -> bool:
    """Whether a job input names stored bytes rather than a Telegram file."""
    return reference.startswith(PREFIX)


def new_reference(user_id: int) -> str:
    """A fresh reference for bytes `user_id` hands over, to be written with its job (`write`)."""
    return f"{PREFIX}{user_id}:{secrets.token_urlsafe(12)}"


def _parts(reference: str) -> tuple[int, str] | None:
    owner, _, key = reference.removeprefix(PREFIX).partition(":")
    return (int(owner), key) if owner.isdecimal() and key else None


async def write(session: AsyncConnection, reference: str, data: bytes, *, now: datetime) -> None:
    """Store `data` under `reference` in the caller's transaction, and forget the owner's oldest beyond MOST_KEPT."""
    parts = _parts(reference)
    if parts is None:
        raise ValueError("not a stored input reference")
    owner, key = parts
    repository = ConversationRepository(session)
    await repository.put(owner, KIND, key, {"b64": base64.b64encode(data).decode("ascii")},
                         expires_at=now + KEPT_FOR)
    await repository.keep_newest(owner, KIND, MOST_KEPT)


class StoredInputs:
    """Gives the worker the images a person handed over outside a chat (JobService wrote them with their job)."""

    def __init__(self, conversations: Conversations) -> None:
        self._conversations = conversations

    async def load(self, reference: str) -> bytes | None:
        """The bytes a reference names; None when it is malformed or has expired."""
        parts = _parts(reference)
        if parts is None:
            return None
        row = await self._conversations.get(parts[0], KIND, parts[1])
        return None if row is None else base64.b64decode(row["b64"])
