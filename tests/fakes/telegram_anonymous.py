"""Messages sent on behalf of a chat, as Telegram delivers them: anonymous group admins and users posting as a channel.

Telegram puts one shared bot user in `from` for all of them (GroupAnonymousBot for anonymous admins,
Channel_Bot for posts sent as a channel) and the chat they speak for in `sender_chat`.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import Chat, User

ANONYMOUS_ADMIN = User(1087968824, "Group", username="GroupAnonymousBot", is_bot=True)
CHANNEL_SENDER = User(136817688, "Channel", username="Channel_Bot", is_bot=True)


def anonymous_admin_sends(fake: FakeTelegram, group: Chat, **content: Any) -> dict[str, Any]:
    """An anonymous admin of `group` writes there: from GroupAnonymousBot, sender_chat the group itself."""
    return _sends_as(fake, group, ANONYMOUS_ADMIN, group, **content)


def channel_sends(fake: FakeTelegram, group: Chat, channel: Chat, **content: Any) -> dict[str, Any]:
    """A user writes in `group` as `channel`: from Channel_Bot, sender_chat the channel."""
    return _sends_as(fake, group, CHANNEL_SENDER, channel, **content)


def _sends_as(fake: FakeTelegram, chat: Chat, sender: User, sender_chat: Chat, *, text: str | None = None,
              caption: str | None = None, photo: bytes | None = None, reply_to: int | None = None,
              media_group_id: str | None = None) -> dict[str, Any]:
    if chat.type not in ("group", "supergroup"):
        raise ValueError("only groups have anonymous admins and members posting as a channel")
    message = fake._state.user_message(chat, sender, text=text, caption=caption, photo=photo, document=None,
                                       reply_to=reply_to, media_group_id=media_group_id, entities_for_commands=True)
    message.sender_chat = sender_chat
    return fake._publish("message", message)
