"""The bot's menu button, per private chat or the default: setChatMenuButton / getChatMenuButton.

As the Bot API server parses it: `menu_button` absent means MenuButtonDefault; "commands", "default"
or "web_app" (text and an HTTPS web_app.url); a chat_id that is not a user's (a group's is negative)
is "invalid chat_id specified". "default" for a chat clears its own button, so the chat shows the
bot's default again; getChatMenuButton answers the chat's own button, else the default one, else
MenuButtonDefault ("no specific value was set"). Error texts are those of tdlib/telegram-bot-api
(first letter lowered, as the server sends them); the HTTPS check's text is TDLib's for Web App URLs.
"""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.telegram_checks import check_web_app_url
from tests.fakes.telegram_models import bad_request

_DEFAULT = {"type": "default"}


class MenuButtons:
    """Menu buttons the bot set: `default` for every chat without one of its own, and `per_chat`."""

    def __init__(self) -> None:
        self.default: dict[str, Any] | None = None
        self.per_chat: dict[int, dict[str, Any]] = {}

    def shown(self, chat_id: int | None = None) -> dict[str, Any]:
        """The MenuButton a chat shows (None: the default), as getChatMenuButton answers it."""
        own = self.per_chat.get(chat_id) if chat_id is not None else None
        return dict(own or self.default or _DEFAULT)

    async def set_chat_menu_button(self, params: dict[str, Any], files: Any) -> bool:
        """setChatMenuButton."""
        button = _menu_button(params.get("menu_button"))
        chat_id = _user_chat_id(params)
        if chat_id is None:
            self.default = None if button["type"] == "default" else button
        elif button["type"] == "default":
            self.per_chat.pop(chat_id, None)
        else:
            self.per_chat[chat_id] = button
        return True

    async def get_chat_menu_button(self, params: dict[str, Any], files: Any) -> dict[str, Any]:
        """getChatMenuButton."""
        return self.shown(_user_chat_id(params))


def _user_chat_id(params: dict[str, Any]) -> int | None:
    if "chat_id" not in params:
        return None
    chat_id = params["chat_id"]
    if isinstance(chat_id, bool) or not isinstance(chat_id, int) or chat_id <= 0:
        raise bad_request("invalid chat_id specified")
    return chat_id


def _menu_button(value: Any) -> dict[str, Any]:
    if value is None or value == "":
        return dict(_DEFAULT)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise bad_request("can't parse menu button JSON object") from None
    if not isinstance(value, dict):
        raise bad_request("can't parse menu button: MenuButton must be an Object")
    kind = value.get("type")
    if not isinstance(kind, str):
        raise bad_request('can\'t parse menu button: Can\'t find field "type"')
    if kind in ("default", "commands"):
        return {"type": kind}
    if kind != "web_app":
        raise bad_request("can't parse menu button: MenuButton has unsupported type")
    text = value.get("text")
    if not isinstance(text, str):
        raise bad_request('can\'t parse menu button: Can\'t find field "text"')
    url = check_web_app_url(value.get("web_app"), "menu button", parse_error="menu button")
    return {"type": "web_app", "text": text, "web_app": {"url": url}}
