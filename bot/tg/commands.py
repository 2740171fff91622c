"""Reading commands from message text or photo captions ("/upscale@mybot 2")."""

from __future__ import annotations

import re
from dataclasses import dataclass

_COMMAND = re.compile(r"^/([A-Za-z0-9_]{1,32})(?:@([A-Za-z0-9_]{3,64}))?(?:\s+(.*))?$", re.DOTALL)


@dataclass(frozen=True)
class CommandCall:
    """A command and the text after it."""

    name: str
    args: str


def parse_command(text: str | None, bot_username: str | None) -> CommandCall | None:
    """The command at the start of `text`, unless it is addressed to another bot."""
    if not text:
        return None
    match = _COMMAND.match(text.strip())
    if match is None:
        return None
    name, target, rest = match.groups()
    if target and bot_username and target.lower() != bot_username.lower():
        return None
    return CommandCall(name.lower(), (rest or "").strip())
