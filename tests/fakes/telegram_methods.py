"""The Bot API methods of the fake, by name: updates, commands, edits, deletes, callbacks, files."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

from tests.fakes.telegram_checks import (
    check_chat_action,
    check_commands,
    check_reactions,
    inline_markup_for_edit,
    message_text,
)
from tests.fakes.telegram_members import ChatMembers
from tests.fakes.telegram_menu import MenuButtons
from tests.fakes.telegram_models import (
    MAX_BOT_DOWNLOAD_BYTES,
    StoredMessage,
    bad_request,
)
from tests.fakes.telegram_params import int_param, str_param
from tests.fakes.telegram_payments import Payments
from tests.fakes.telegram_prepared import PreparedMessages
from tests.fakes.telegram_profile import BotProfile
from tests.fakes.telegram_sending import Files, MessageSender
from tests.fakes.telegram_state import TelegramState

Handler = Callable[[dict[str, Any], Files], Awaitable[Any]]
_NOT_MODIFIED = (
    "message is not modified: specified new message content and reply markup are exactly the same "
    "as a current content and reply markup of the message"
)
_QUERY_INVALID = "query is too old and response timeout expired or query ID is invalid"
_MAX_POLL_TIMEOUT = 50.0
_MAX_CALLBACK_ANSWER = 200


class BotApi:
    """Dispatches method names (case-insensitive, as Telegram does) to their implementations."""

    def __init__(self, state: TelegramState, bot_username: str) -> None:
        self._state = state
        self._bot_username = bot_username
        self._commands: dict[str, list[dict[str, str]]] = {}
        #: inline mode, once the server attaches it (getMe reports whether it is on)
        self.inline: Any = None
        #: guest mode, once the server attaches it (getMe reports whether it is on)
        self.guest: Any = None
        self.members = ChatMembers(state)
        self.payments = Payments(state)
        self.profile = BotProfile()
        self.menu_buttons = MenuButtons()
        self.prepared = PreparedMessages()
        sender = MessageSender(state)
        handlers: dict[str, Handler] = {
            "getMe": self.get_me,
            "getUpdates": self.get_updates,
            "deleteWebhook": self.delete_webhook,
            "setMyCommands": self.set_my_commands,
            "getMyCommands": self.get_my_commands,
            "setMyDescription": self.profile.set_description,
            "getMyDescription": self.profile.get_description,
            "setMyShortDescription": self.profile.set_short_description,
            "getMyShortDescription": self.profile.get_short_description,
            "sendMessage": sender.send_message,
            "sendPhoto": sender.send_photo,
            "sendDocument": sender.send_document,
            "sendMediaGroup": sender.send_media_group,
            "editMessageText": self.edit_message_text,
            "deleteMessage": self.delete_message,
            "answerCallbackQuery": self.answer_callback_query,
            "sendChatAction": self.send_chat_action,
            "setMessageReaction": self.set_message_reaction,
            "getFile": self.get_file,
            "getChatMember": self.get_chat_member,
            "sendInvoice": self.payments.send_invoice,
            "answerPreCheckoutQuery": self.payments.answer_pre_checkout_query,
            "refundStarPayment": self.payments.refund_star_payment,
            "getStarTransactions": self.payments.get_star_transactions,
            "createInvoiceLink": self.payments.create_invoice_link,
            "editUserStarSubscription": self.payments.edit_user_star_subscription,
            "setChatMenuButton": self.menu_buttons.set_chat_menu_button,
            "getChatMenuButton": self.menu_buttons.get_chat_menu_button,
            "savePreparedInlineMessage": self.prepared.save_prepared_inline_message,
        }
        self._handlers = {name.lower(): (name, handler) for name, handler in handlers.items()}

    def register(self, name: str, handler: Handler) -> None:
        """Serve (or replace) a method with `handler` (methods modelled in a module of their own)."""
        self._handlers[name.lower()] = (name, handler)

    def canonical(self, method: str) -> str | None:
        """The documented spelling of a method name, or None if the fake does not serve it."""
        entry = self._handlers.get(method.lower())
        return entry[0] if entry else None

    async def call(self, method: str, params: dict[str, Any], files: Files) -> Any:
        """Run a method by its canonical name."""
        return await self._handlers[method.lower()][1](params, files)

    def commands(self, scope: dict[str, Any] | None = None, language_code: str = "") -> list[dict[str, str]]:
        """Commands set for a scope and language, as getMyCommands returns them."""
        return list(self._commands.get(_scope_key(scope, language_code), []))

    # --- bot and updates ----------------------------------------------------------------------

    async def get_me(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """getMe."""
        return {**self._state.bot.to_dict(), "username": self._bot_username,
                "can_join_groups": True, "can_read_all_group_messages": False,
                "supports_inline_queries": self.inline is not None and self.inline.enabled,
                "supports_guest_queries": self.guest is not None and self.guest.enabled,
                "can_connect_to_business": False,
                "has_main_web_app": False}

    async def get_updates(self, params: dict[str, Any], files: Files) -> list[dict[str, Any]]:
        """getUpdates: long polling with offset confirmation and a persistent allowed_updates."""
        allowed = params.get("allowed_updates")
        if allowed is not None:
            if not isinstance(allowed, list) or not all(isinstance(a, str) for a in allowed):
                raise bad_request("can't parse allowed_updates JSON object")
            self._state.allowed_updates = frozenset(allowed) or None
        offset = params.get("offset")
        limit = params.get("limit", 100)
        timeout = params.get("timeout", 0)
        if offset is not None and not isinstance(offset, int):
            raise bad_request("invalid offset specified")
        if not isinstance(limit, int) or not isinstance(timeout, (int, float)):
            raise bad_request("invalid limit or timeout specified")
        limit = min(max(limit, 1), 100)
        timeout = min(max(float(timeout), 0.0), _MAX_POLL_TIMEOUT)
        return await self._state.poll(offset, limit, timeout)

    async def delete_webhook(self, params: dict[str, Any], files: Files) -> bool:
        """deleteWebhook: the fake never has a webhook; drop_pending_updates clears the queue."""
        if params.get("drop_pending_updates"):
            self._state.updates.clear()
        return True

    async def set_my_commands(self, params: dict[str, Any], files: Files) -> bool:
        """setMyCommands for a scope and language."""
        commands = check_commands(params.get("commands"))
        key = _scope_key(params.get("scope"), str_param(params, "language_code") or "")
        self._commands[key] = commands
        return True

    async def get_my_commands(self, params: dict[str, Any], files: Files) -> list[dict[str, str]]:
        """getMyCommands."""
        return self.commands(params.get("scope"), str_param(params, "language_code") or "")

    # --- edits and deletes --------------------------------------------------------------------

    def _target_message(self, params: dict[str, Any], not_found: str) -> StoredMessage:
        if params.get("inline_message_id") is not None:
            raise bad_request("MESSAGE_ID_INVALID")  # the fake never sends inline messages
        chat = self._state.require_chat(params)
        message_id = int_param(params, "message_id", "message identifier is not specified")
        message = self._state.message(chat.id, message_id)
        if message is None:
            raise bad_request(not_found)
        return message

    def _editable(self, params: dict[str, Any]) -> StoredMessage:
        message = self._target_message(params, "message to edit not found")
        if not message.from_bot:
            raise bad_request("message can't be edited")
        return message

    @staticmethod
    def _apply_edit(message: StoredMessage, changes: dict[str, Any]) -> dict[str, Any]:
        markup = message.reply_markup
        current = {key: getattr(message, key) for key in changes if key != "reply_markup"}
        current["reply_markup"] = markup if markup and "inline_keyboard" in markup else None
        if current == {**changes, "reply_markup": changes.get("reply_markup")}:
            raise bad_request(_NOT_MODIFIED)
        for key, value in changes.items():
            setattr(message, key, value)
        message.edit_date = max(message.date, int(time.time()))
        return message.to_dict()

    async def edit_message_text(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """editMessageText; omitting reply_markup removes the keyboard, as in Telegram."""
        message = self._editable(params)
        if message.kind != "text":
            raise bad_request("there is no text in the message to edit")
        text, entities = message_text(params, too_long="MESSAGE_TOO_LONG")
        markup = inline_markup_for_edit(params.get("reply_markup"), message.chat)
        return self._apply_edit(message, {"text": text, "entities": entities, "reply_markup": markup})

    async def delete_message(self, params: dict[str, Any], files: Files) -> bool:
        """deleteMessage: any message in private chats, others' messages in groups only as admin."""
        message = self._target_message(params, "message to delete not found")
        chat = message.chat
        is_admin = self._state.bot.id in self._state.chat_admins.get(chat.id, set())
        if not message.from_bot and chat.type != "private" and not is_admin:
            raise bad_request("message can't be deleted")
        message.deleted = True
        return True

    # --- interaction --------------------------------------------------------------------------

    async def answer_callback_query(self, params: dict[str, Any], files: Files) -> bool:
        """answerCallbackQuery: each query can be answered once."""
        query_id = str_param(params, "callback_query_id")
        if not query_id or query_id not in self._state.callback_queries:
            raise bad_request(_QUERY_INVALID)
        if query_id in self._state.callback_answers:
            raise bad_request(_QUERY_INVALID)
        text = str_param(params, "text") or ""
        if len(text) > _MAX_CALLBACK_ANSWER:
            raise bad_request("MESSAGE_TOO_LONG")
        self._state.callback_answers[query_id] = {
            "text": text or None, "show_alert": bool(params.get("show_alert")), "url": params.get("url"),
        }
        return True

    async def send_chat_action(self, params: dict[str, Any], files: Files) -> bool:
        """sendChatAction."""
        self._state.require_chat(params)
        check_chat_action(params.get("action"))
        return True

    async def set_message_reaction(self, params: dict[str, Any], files: Files) -> bool:
        """setMessageReaction: at most one standard emoji for bots."""
        message = self._target_message(params, "message to react not found")
        reactions = check_reactions(params.get("reaction"))
        if reactions and message.chat.id in self._state.reactions_off:
            raise bad_request("REACTION_INVALID")
        message.reactions = reactions
        return True

    # --- files and members --------------------------------------------------------------------

    async def get_file(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """getFile: a download path for files up to 20 MB."""
        file_id = str_param(params, "file_id")
        stored = self._state.files.get(file_id) if file_id else None
        if stored is None:
            raise bad_request("wrong file_id or the file is temporarily unavailable")
        if stored.size > MAX_BOT_DOWNLOAD_BYTES:
            raise bad_request("file is too big")
        return {"file_id": stored.file_id, "file_unique_id": stored.file_unique_id,
                "file_size": stored.size, "file_path": self._state.file_path_of(stored)}

    async def get_chat_member(self, params: dict[str, Any], files: Files) -> dict[str, Any]:
        """getChatMember: the user's status in the chat (see telegram_members)."""
        chat = self._state.require_chat(params)
        user_id = int_param(params, "user_id", "user_id is empty")
        return self.members.answer(chat, user_id)


def _scope_key(scope: Any, language_code: str) -> str:
    scope = scope if isinstance(scope, dict) else {"type": "default"}
    return json.dumps([scope, language_code], sort_keys=True)
