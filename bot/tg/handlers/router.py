"""Routes commands from message text and photo captions to their handlers (PTB's CommandHandler reads text only)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from telegram import Message, Update

from bot.tg.commands import CommandCall, parse_command
from bot.tg.context import CustomContext

CommandHandlerFn = Callable[[Update, CustomContext, CommandCall], Awaitable[None]]


@dataclass
class Router:
    """Command name → handler, plus the command menu shown by Telegram clients (descriptions are msgids)."""

    handlers: dict[str, CommandHandlerFn] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    #: commands in the menu of the bot's admins only (BOT_ADMINS), after everyone's
    admin_descriptions: dict[str, str] = field(default_factory=dict)
    #: how /help writes a command with its arguments (a msgid, "/art <style> [description]"); default "/name"
    usages: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, handler: CommandHandlerFn, description: str | None = None, *,
            admins_only: bool = False, usage: str | None = None) -> None:
        """Answer `/name` with `handler`; list it in the command menu (and /help, written as `usage`) when it has a
        `description` (a msgid)."""
        self.handlers[name] = handler
        if description:
            (self.admin_descriptions if admins_only else self.descriptions)[name] = description
        if usage:
            self.usages[name] = usage

    def commands(self) -> list[tuple[str, str]]:
        """Everyone's menu as /help lists it: (usage, description) msgid pairs, in the menu's order."""
        return [(self.usages.get(name, f"/{name}"), description) for name, description in self.descriptions.items()]

    def command_in(self, message: Message, bot_username: str | None) -> CommandCall | None:
        """The command a message carries in its text or caption, if any."""
        return parse_command(message.text or message.caption, bot_username)
