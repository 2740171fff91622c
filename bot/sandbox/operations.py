"""The sandbox's operations: each registered operation's renderer (`bot.sandbox.renderers.<name>`).

The server routes each operation's path to its parser; the task runner calls `render` with the parsed
parameters and the loaded input images. The renderers come from the bot's own registry of operations
(`bot.operations.registry`), so an operation added there appears here too.
"""

from __future__ import annotations

from bot.operations import registry
from bot.sandbox.effects import InputError, Rendering, decode
from bot.sandbox.renderers.base import Params, SandboxOperation

__all__ = ["InputError", "Rendering", "SandboxOperation", "operations", "render"]


def operations(extra: registry.Extra = ()) -> dict[str, SandboxOperation]:
    """Every registered operation's endpoints (and `extra`'s), keyed by the service's name for each; a renderer
    module serving more than one endpoint lists them all in `SANDBOXES`."""
    return {operation.name: operation for module in registry.renderers(extra)
            for operation in getattr(module, "SANDBOXES", (module.SANDBOX,))}


def render(operation: str, params: Params, inputs: dict[str, bytes], extra: registry.Extra = ()) -> Rendering:
    """Do the work of one task; raises InputError when an input cannot be used."""
    return operations(extra)[operation].render(params, {role: decode(data) for role, data in inputs.items()}, inputs)
