"""The bot's one HTTP server: Telegram's webhook, the service's callbacks, signed media links, health, metrics.

It imports nothing from `bot.tg`: a webhook update is handed to a callable it is given.
"""

from __future__ import annotations

from bot.http.server import HttpServer, Readiness, build_app
from bot.http.webhook import derive_webhook_secret

__all__ = ["HttpServer", "Readiness", "build_app", "derive_webhook_secret"]
