"""The embedded sandbox: start and stop the service on a local port, and inspect what it saw."""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from urllib.parse import urlsplit

from aiohttp import web

from bot.sandbox.callbacks import CallbackSender
from bot.sandbox.config import SandboxConfig
from bot.sandbox.faults import FaultInjector
from bot.sandbox.inputs import ImageLoader
from bot.sandbox.lifecycle import TaskRunner
from bot.sandbox.ratelimit import TokenBucket
from bot.sandbox.server import ServiceContext, build_app
from bot.sandbox.state import ReceivedRequest, SandboxState, SandboxTask, UploadSlots

logger = logging.getLogger("bot.sandbox")

#: seconds stop() waits for requests still being answered (a stalled "timeout" fault, say)
SHUTDOWN_GRACE_S = 1.0


class Sandbox:
    """The image service's interface served from this process, with Pillow doing the work."""

    def __init__(self, config: SandboxConfig | None = None) -> None:
        self.config = config or SandboxConfig()
        self.state = SandboxState(credits_total=self.config.credits, credits_remaining=self.config.credits,
                                  upload_slots=UploadSlots(self.config.upload_slot_seconds))
        self.faults = FaultInjector(self.config.faults)
        self.base_url = ""
        self.static_url = ""
        self._runner: web.AppRunner | None = None
        self._loader: ImageLoader | None = None
        self._tasks: TaskRunner | None = None

    def __repr__(self) -> str:
        return f"Sandbox(base_url={self.base_url!r}, tasks={len(self.tasks)})"

    @property
    def received(self) -> list[ReceivedRequest]:
        """Every request received, oldest first."""
        return self.state.received

    @property
    def tasks(self) -> dict[str, SandboxTask]:
        """Every task created, by taskId."""
        return self.state.tasks

    @property
    def callbacks(self) -> CallbackSender | None:
        """What sent task callbacks so far (None before the first, or without a webhook URL)."""
        return self._tasks.callbacks if self._tasks is not None else None

    @property
    def faults_injected(self) -> Counter[str]:
        """How many faults of each kind were injected."""
        return self.state.faults_injected

    @property
    def credits_remaining(self) -> int:
        """Tokens left; tests may set it to reach the no-credits answer quickly."""
        return self.state.credits_remaining

    @credits_remaining.setter
    def credits_remaining(self, value: int) -> None:
        self.state.credits_remaining = value

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on host:port (0 picks a free port); returns the base URL."""
        if self._runner is not None:
            raise RuntimeError("sandbox already started")
        self._loader = ImageLoader(self.config.max_image_bytes, self._local_file)
        self._tasks = TaskRunner(self.state, self.config, self.faults, self._loader,
                                 file_url=lambda name: f"{self.base_url}/files/{name}")
        limiter = TokenBucket(self.config.rate_limit_per_s) if self.config.rate_limit_per_s else None
        app = build_app(ServiceContext(self.config, self.state, self.faults, self._tasks, limiter,
                                       base_url=lambda: self.base_url))
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=SHUTDOWN_GRACE_S)
        await runner.setup()
        try:
            site = web.TCPSite(runner, host, port)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        bound_host, bound_port = runner.addresses[0][:2]
        shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
        self.base_url = (self.config.public_url or f"http://{shown_host}:{bound_port}").rstrip("/")
        self.static_url = f"{self.base_url}/static"
        logger.debug("sandbox serving at %s", self.base_url)
        return self.base_url

    async def stop(self) -> None:
        """Stop serving and cancel unfinished work; the recorded state stays readable."""
        if self._runner is None:
            return
        runner, self._runner = self._runner, None
        await runner.cleanup()
        if self._tasks is not None:
            await self._tasks.close()
        if self._loader is not None:
            await self._loader.aclose()
        logger.debug("sandbox at %s stopped", self.base_url)

    async def __aenter__(self) -> Sandbox:
        if self._runner is None:
            await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.stop()

    def _local_file(self, url: str) -> bytes | None:
        """The bytes behind a URL this sandbox serves, without an HTTP round trip."""
        if not self.base_url or not url.startswith(self.base_url + "/"):
            return None
        path = urlsplit(url).path
        folder, _, name = path.rpartition("/")
        if folder == "/uploads":
            stored = self.state.uploads.get(name)
        elif folder in ("/files", "/static/sandbox"):
            stored = self.state.results.get(name)
        else:
            return None
        return stored.data if stored is not None else None


async def serve(config: SandboxConfig, host: str, port: int) -> None:
    """Run the sandbox until cancelled (used by `python -m bot sandbox`)."""
    sandbox = Sandbox(config)
    await sandbox.start(host, port)
    try:
        await asyncio.Event().wait()
    finally:
        await sandbox.stop()
