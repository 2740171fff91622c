"""The aiohttp application and server: routes for health, metrics, media links, the webhook and callbacks.

    GET  /healthz           200 while the process serves HTTP at all
    GET  /readyz            200 when the database answers and every loop turned recently; else 503
    GET  /metrics           Prometheus text format (bot.metrics, its own registry)

/readyz and /metrics read the database through bot.http.probes: shared, cached a few seconds, read
without write locks, and never waited on longer than DB_CHECK_TIMEOUT_S.
    GET  /media/<token>     signed media links (bot.media)
    POST <webhook path>     Telegram's updates (bot.http.webhook), when webhook mode is on
    POST <callback path>    the service's task callbacks (bot.http.callbacks), when AIART_WEBHOOK_PATH is set
    GET  /app/…, /app/api/… the Mini App's page and its API (bot.http.app_routes), when PUBLIC_URL is https

No access log: the media, webhook and callback paths are capabilities.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from aiohttp.log import server_logger

from bot.http.app_api import MAX_MASK_BODY, MiniApp
from bot.http.app_routes import add_app_routes
from bot.http.callbacks import PollNow, callback_handler
from bot.http.probes import FRESH_FOR_S, SharedRead
from bot.http.webhook import AcceptUpdate, webhook_handler
from bot.media import MediaLinks, add_media_routes
from bot.metrics import Metrics

log = logging.getLogger(__name__)

#: a loop that has not turned for this long is stuck, and the replica is not ready
STALE_AFTER_S = 60.0
DB_CHECK_TIMEOUT_S = 2.0
#: a database check that succeeded is trusted this long (a probe every second costs one read every few)
READY_FRESH_S = 2.0


@dataclass
class Readiness:
    """What /readyz checks: the database, and a heartbeat per loop (the worker, the intake or the inbox)."""

    check_database: Callable[[], Awaitable[object]]
    stale_after: float = STALE_AFTER_S
    #: loop name -> a callable giving the monotonic time it last turned
    loops: dict[str, Callable[[], float]] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic

    def __post_init__(self) -> None:
        self._database = SharedRead(self.check_database, fresh_for=READY_FRESH_S, timeout=DB_CHECK_TIMEOUT_S)

    async def problems(self) -> list[str]:
        """What is wrong, in a word each; empty when ready."""
        found = []
        try:
            await self._database.get()
        except Exception as error:
            found.append(f"database: {type(error).__name__}")
        now = self.clock()
        for name, last_turn in self.loops.items():
            if now - last_turn() > self.stale_after:
                found.append(f"{name}: not turning")
        return found


@dataclass
class Routes:
    """Which optional endpoints the server has."""

    media: MediaLinks | None = None
    webhook_path: str | None = None
    webhook_secret: str | None = None
    accept_update: AcceptUpdate | None = None
    callback_path: str | None = None
    poll_now: PollNow | None = None
    callback_ips: frozenset[str] = frozenset()
    #: proxies whose X-Forwarded-For is believed (addresses or networks)
    trusted_proxies: frozenset[str] = frozenset()
    #: the Mini App (None: no /app/ at all)
    mini_app: MiniApp | None = None


def build_app(readiness: Readiness, metrics: Metrics, routes: Routes,
              jobs_waiting: Callable[[], Awaitable[dict[str, int]]] | None = None) -> web.Application:
    """The application serving every endpoint the bot has."""
    waiting = SharedRead(jobs_waiting, fresh_for=FRESH_FOR_S, timeout=DB_CHECK_TIMEOUT_S) if jobs_waiting else None

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def readyz(request: web.Request) -> web.Response:
        problems = await readiness.problems()
        return web.json_response({"status": "fail" if problems else "ok", "problems": problems},
                                 status=503 if problems else 200)

    async def metrics_page(request: web.Request) -> web.Response:
        if waiting is not None:
            try:
                counts = await waiting.get()
            except Exception as error:  # the page still shows this process's counters
                log.warning("could not count waiting jobs for /metrics: %s", type(error).__name__)
            else:
                for state, count in counts.items():
                    metrics.jobs_waiting.labels(state).set(count)
        return web.Response(body=metrics.render(), headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    # every handler caps its own body; the largest is the Mini App's painted mask
    app = web.Application(client_max_size=MAX_MASK_BODY if routes.mini_app is not None else 1024 * 1024)
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics_page)
    if routes.media is not None:
        add_media_routes(app, routes.media)
    if routes.webhook_path and routes.accept_update is not None and routes.webhook_secret:
        app.router.add_route("*", routes.webhook_path, webhook_handler(routes.webhook_secret, routes.accept_update))
    if routes.callback_path and routes.poll_now is not None:
        app.router.add_route("*", routes.callback_path, callback_handler(
            routes.poll_now, allowed_ips=routes.callback_ips, trusted_proxies=routes.trusted_proxies,
            on_result=lambda outcome: metrics.callbacks.labels(outcome).inc()))
    if routes.mini_app is not None:
        add_app_routes(app, routes.mini_app)
    return app


class _ClientFaults(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's server log, with a request it could not parse (a bad request line, a header too long: anyone on
    the network can send one) at INFO in one line instead of an ERROR with a traceback; real errors unchanged."""

    def exception(self, msg: object, *args: object, exc_info: object = True, **kwargs: Any) -> None:
        if isinstance(exc_info, HttpProcessingError) and 400 <= exc_info.code < 500:
            self.logger.info("%s: %d %s", msg % args if args else msg, exc_info.code, type(exc_info).__name__)
            return
        self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)  # type: ignore[arg-type]


class HttpServer:
    """Serves an application on host:port until stopped."""

    def __init__(self, app: web.Application) -> None:
        self._app = app
        self._runner: web.AppRunner | None = None

    async def start(self, host: str, port: int) -> str:
        """Listen on host:port (0: any free port); the local URL root."""
        self._runner = web.AppRunner(self._app, access_log=None, handle_signals=False, shutdown_timeout=1.0,
                                     logger=_ClientFaults(server_logger, {}))
        await self._runner.setup()
        await web.TCPSite(self._runner, host, port).start()
        bound_host, bound_port = self._runner.addresses[0][:2]
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        return f"http://{shown}:{bound_port}"

    async def stop(self) -> None:
        """Stop listening."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
