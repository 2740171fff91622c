"""Privacy mode, as Telegram applies it to a bot in a group, and the bot's own membership updates.

With privacy mode on (Telegram's default for bots) a bot that is not an administrator of a group
receives only: messages with a command (Telegram delivers `/command@thisbot`, and a bare `/command`
when this bot was the last to write there; the fake, one bot per group, delivers both), replies to
this bot's messages, and messages that mention it. Everything else stays in the group unseen by the
bot. Private chats are never filtered. `my_chat_member` updates tell the bot it was added or removed.
"""

from __future__ import annotations

import time
from typing import Any

from tests.fakes.telegram_models import Chat, StoredMessage, User


def seen_by_bot(message: StoredMessage, bot: User, *, privacy_mode: bool, admins: set[int]) -> bool:
    """Whether Telegram delivers this group message to the bot."""
    if not privacy_mode or message.chat.type not in ("group", "supergroup") or bot.id in admins:
        return True
    entities = (message.entities or []) + (message.caption_entities or [])
    if any(entity.get("type") == "bot_command" for entity in entities):
        return True
    if message.reply_to is not None and message.reply_to.from_bot:
        return True
    words = f"{message.text or ''} {message.caption or ''}"
    return bool(bot.username) and f"@{bot.username}".lower() in words.lower()


def my_chat_member(chat: Chat, by: User, bot: User, old: str, new: str) -> dict[str, Any]:
    """The ChatMemberUpdated object of a change in the bot's own status in a chat."""
    return {
        "chat": chat.to_dict(),
        "from": by.to_dict(),
        "date": int(time.time()),
        "old_chat_member": {"status": old, "user": bot.to_dict()},
        "new_chat_member": {"status": new, "user": bot.to_dict()},
    }
