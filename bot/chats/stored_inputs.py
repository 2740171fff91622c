"""Input images that came from the Mini App rather than from a chat (a painted mask), kept in the database.

A job's inputs are Telegram file ids, except these: `app:<key>`, which no file id can look like (file ids
have no colon). The bytes sit in the conversations table (as BASE64, under the person's id), so any replica's
worker finds them, and they expire after a week, as a result's "again" button would still want them.
"""

from __future__ import annotations

import base64
import secrets
from datetime import timedelta

from bot.chats.conversations import Conversations

PREFIX = "app:"
KIND = "app_input"
KEPT_FOR = timedelta(days=7)


def is_stored(reference: str) -> bool:
    """Whether a job input names stored bytes rather than a Telegram file."""
    return reference.startswith(PREFIX)


class StoredInputs:
    """Keeps images a person handed over outside a chat, and gives them back to the worker."""

    def __init__(self, conversations: Conversations) -> None:
        self._conversations = conversations

    async def keep(self, user_id: int, data: bytes) -> str:
        """Store `data` for a job of `user_id`; the input reference to put in the job."""
        key = secrets.token_urlsafe(12)
        await self._conversations.put(user_id, KIND, key, {"b64": base64.b64encode(data).decode("ascii")},
                                      keep_for=KEPT_FOR)
        return f"{PREFIX}{user_id}:{key}"

    async def load(self, reference: str) -> bytes | None:
        """The bytes a reference names; None when it is malformed or has expired."""
        owner, _, key = reference.removeprefix(PREFIX).partition(":")
        if not owner.isdigit() or not key:
            return None
        row = await self._conversations.get(int(owner), KIND, key)
        return None if row is None else base64.b64decode(row["b64"])
