"""The operations the bot offers: each one's module (`bot.operations.<name>`) and sandbox renderer.

An operation's module holds everything the bot knows of it and gives its catalogue entry from
`entry(styles)`; its renderer (`bot.sandbox.renderers.<name>`) gives the sandbox's `SANDBOX` for its endpoint.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from types import ModuleType

from bot.operations.catalogue import Operation
from bot.operations.styles import StyleCatalogue

#: the operations, in the order menus show them
NAMES = ("upscale", "retouch", "imagine", "art", "removebg", "headshot", "colorize", "restore", "faceswap",
         "expand", "replace", "generate", "animate", "video")
#: operations from outside the package, given to `places(extra)` and the functions below:
#: (operation module, sandbox renderer module) as dotted names, shown after the package's own
Extra = Sequence[tuple[str, str]]


def places(extra: Extra = ()) -> list[tuple[str, str]]:
    """Every operation's module and its sandbox renderer's, as dotted names, in menu order."""
    return [(f"bot.operations.{name}", f"bot.sandbox.renderers.{name}") for name in NAMES] + list(extra)


def modules(extra: Extra = ()) -> list[ModuleType]:
    """Every operation's module, in menu order."""
    return [importlib.import_module(module) for module, _ in places(extra)]


def renderers(extra: Extra = ()) -> list[ModuleType]:
    """Every operation's sandbox renderer module."""
    return [importlib.import_module(renderer) for _, renderer in places(extra)]


def build_catalogue(styles: StyleCatalogue, extra: Extra = ()) -> dict[str, Operation]:
    """All operations, keyed by command name, in the order menus show them."""
    operations = [module.entry(styles) for module in modules(extra)]
    return {operation.name: operation for operation in operations}
