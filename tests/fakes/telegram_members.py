"""Who is in a chat, and as what: the fake's answers to getChatMember, as Telegram gives them.

In a group a user is the owner ("creator"), an administrator (`chat_admins`, shared with
deleteMessage), a "member" (anyone who wrote there, or was said to join), or not in it: "left" or
banned ("kicked", with until_date 0: for ever). Telegram answers "left" for a user it knows who is
not in the group, not an error. The bot is a member of every group it hears from. In a private
chat only the user and the bot are members. Errors as Telegram's: an unknown chat is "chat not
found", a user id Telegram has never seen is "user not found".
"""

from __future__ import annotations

from typing import Any

from tests.fakes.telegram_models import Chat, User, bad_request
from tests.fakes.telegram_state import TelegramState

ADMIN_RIGHTS = {
    "can_be_edited": False, "is_anonymous": False, "can_manage_chat": True,
    "can_delete_messages": True, "can_manage_video_chats": True, "can_restrict_members": True,
    "can_promote_members": False, "can_change_info": True, "can_invite_users": True,
    "can_post_stories": False, "can_edit_stories": False, "can_delete_stories": False,
    "can_pin_messages": True,
}


class ChatMembers:
    """Group membership beyond what messages show: owners, joins, leaves and bans set by the test."""

    def __init__(self, state: TelegramState) -> None:
        self._state = state
        self.owners: dict[int, int] = {}
        self._joined: dict[int, set[int]] = {}
        self._left: dict[int, set[int]] = {}
        self._banned: dict[int, set[int]] = {}

    def make_owner(self, chat: Chat, user: User) -> None:
        """`user` created the group (getChatMember: "creator")."""
        self._state.remember(chat, user)
        self.owners[chat.id] = user.id
        self._in(chat.id, user.id)

    def make_admin(self, chat: Chat, user: User) -> None:
        """`user` is promoted to administrator of the group."""
        self._state.remember(chat, user)
        self._state.chat_admins.setdefault(chat.id, set()).add(user.id)
        self._in(chat.id, user.id)

    def join(self, chat: Chat, user: User) -> None:
        """`user` joins the group (before writing anything)."""
        self._state.remember(chat, user)
        self._in(chat.id, user.id)

    def leave(self, chat: Chat, user: User) -> None:
        """`user` leaves the group (losing any admin rights)."""
        self._out(chat.id, user.id)
        self._left.setdefault(chat.id, set()).add(user.id)

    def ban(self, chat: Chat, user: User) -> None:
        """`user` is banned from the group for ever."""
        self._out(chat.id, user.id)
        self._banned.setdefault(chat.id, set()).add(user.id)

    def answer(self, chat: Chat, user_id: int) -> dict[str, Any]:
        """The ChatMember object getChatMember returns, or Telegram's 400."""
        user = self._state.bot if user_id == self._state.bot.id else self._state.users.get(user_id)
        if user is None:
            raise bad_request("user not found")
        if chat.type == "private":
            if user_id not in (chat.id, self._state.bot.id):
                raise bad_request("user not found")
            return {"status": "member", "user": user.to_dict()}
        status = self.status(chat, user_id)
        member: dict[str, Any] = {"status": status, "user": user.to_dict()}
        if status == "creator":
            member["is_anonymous"] = False
        elif status == "administrator":
            member.update(ADMIN_RIGHTS)
        elif status == "kicked":
            member["until_date"] = 0
        return member

    def status(self, chat: Chat, user_id: int) -> str:
        """The user's status in a group: creator, administrator, member, left or kicked."""
        if user_id in self._banned.get(chat.id, set()):
            return "kicked"
        if user_id in self._left.get(chat.id, set()):
            return "left"
        if self.owners.get(chat.id) == user_id:
            return "creator"
        if user_id in self._state.chat_admins.get(chat.id, set()):
            return "administrator"
        if user_id == self._state.bot.id or user_id in self._joined.get(chat.id, set()) or self._wrote(chat, user_id):
            return "member"
        return "left"

    def _wrote(self, chat: Chat, user_id: int) -> bool:
        return any(message.sender is not None and message.sender.id == user_id
                   for message in self._state.messages.get(chat.id, {}).values())

    def _in(self, chat_id: int, user_id: int) -> None:
        self._joined.setdefault(chat_id, set()).add(user_id)
        self._left.get(chat_id, set()).discard(user_id)
        self._banned.get(chat_id, set()).discard(user_id)

    def _out(self, chat_id: int, user_id: int) -> None:
        self._joined.get(chat_id, set()).discard(user_id)
        self._state.chat_admins.get(chat_id, set()).discard(user_id)
        if self.owners.get(chat_id) == user_id:
            del self.owners[chat_id]
