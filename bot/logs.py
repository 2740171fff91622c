"""Logging set-up: useful lines, and no secret in any of them."""

from __future__ import annotations

import logging
from collections.abc import Iterable


class RedactSecrets(logging.Filter):
    """Replaces known secret strings in every record's final message (a last line of defence)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = [secret for secret in secrets if secret and len(secret) >= 6]

    def filter(self, record: logging.LogRecord) -> bool:
        if not self._secrets:
            return True
        message = record.getMessage()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        redacted = message
        exc_text = record.exc_text or ""
        for secret in self._secrets:
            redacted = redacted.replace(secret, "***")
            exc_text = exc_text.replace(secret, "***")
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_text:
            record.exc_text = exc_text
        return True


def setup_logging(level: str, secrets: Iterable[str] = ()) -> None:
    """Configure the root logger once, with secret redaction on its handler."""
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactSecrets(secrets))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # httpx logs every request URL at INFO, and Bot API URLs carry the bot token
    for noisy in ("httpx", "httpcore", "telegram.ext.Updater", "apscheduler", "aiohttp.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
