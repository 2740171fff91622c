"""The embedded implementation of the image service: the same HTTP interface, local Pillow work.

    sandbox = Sandbox(SandboxConfig(task_seconds=0.05))
    base_url = await sandbox.start()          # http://127.0.0.1:<port>
    ...                                       # talk to it like the live service
    await sandbox.stop()
"""

from __future__ import annotations

from bot.sandbox.config import FAULT_KINDS, FaultConfig, SandboxConfig
from bot.sandbox.service import Sandbox, serve
from bot.sandbox.state import ReceivedRequest, SandboxTask

__all__ = ["FAULT_KINDS", "FaultConfig", "ReceivedRequest", "Sandbox", "SandboxConfig", "SandboxTask", "serve"]
