"""Logging set-up: useful lines, and no secret in any of them.

Two layers: loggers known to print secrets are kept quiet (httpx logs every request URL at INFO, and
a Bot API URL carries the bot token; python-telegram-bot logs its API URLs at DEBUG), and the one
root handler redacts every known secret from each record's message, traceback and stack, so a line
nobody foresaw still cannot leak. Uncaught exceptions go through the same handler: python-telegram-bot
puts the token into the message of the InvalidToken it raises at start-up.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Iterable
from types import TracebackType
from typing import IO
from urllib.parse import quote

REDACTED = "***"
MIN_SECRET_LENGTH = 6
#: loggers that print secrets or user content below WARNING
NOISY_LOGGERS = ("httpx", "httpcore", "telegram", "apscheduler", "aiohttp.access", "hpack")
#: loggers whose INFO lines are routine (alembic names every migration it applies at each first start)
ROUTINE_LOGGERS = ("alembic",)
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: the password of any URL with credentials (a database URL): blanked whatever its length
_URL_PASSWORD = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]*:)[^\s/@]+@")


def secret_forms(secrets: Iterable[str]) -> list[str]:
    """Each secret as written, percent-encoded as in a URL, and (for a bot token "<id>:<secret>") its
    secret part alone; longest first, so a whole token is blanked before its part."""
    forms: set[str] = set()
    for secret in secrets:
        _, colon, tail = secret.partition(":")
        for form in (secret, tail if colon else ""):
            if form and len(form) >= MIN_SECRET_LENGTH:
                forms.update({form, quote(form, safe=""), quote(form)})
    return sorted(forms, key=len, reverse=True)


class RedactSecrets(logging.Filter):
    """Replaces known secret strings, and the password of any URL, in every record's final message
    (a last line of defence)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._secrets = secret_forms(secrets)

    def redact(self, text: str) -> str:
        """`text` with every known secret, and every URL's password, replaced."""
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return _URL_PASSWORD.sub(rf"\g<1>{REDACTED}@", text)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def redacting_handler(secrets: Iterable[str], stream: IO[str] | None = None) -> logging.Handler:
    """The handler setup_logging installs: plain lines on `stream` (stderr), secrets redacted."""
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    handler.addFilter(RedactSecrets(secrets))
    return handler


def quiet_noisy_loggers(level: str | int) -> None:
    """Keep the loggers that print request URLs (and so the bot token), and routine ones, at WARNING or above."""
    threshold = max(logging.WARNING, logging.getLevelName(level) if isinstance(level, str) else level)
    for name in NOISY_LOGGERS + ROUTINE_LOGGERS:
        logging.getLogger(name).setLevel(threshold)


def setup_logging(level: str, secrets: Iterable[str] = ()) -> None:
    """Configure the root logger once, with secret redaction on its handler and on uncaught exceptions."""
    secrets = list(secrets)
    root = logging.getLogger()
    root.handlers[:] = [redacting_handler(secrets)]
    root.setLevel(level.upper())
    quiet_noisy_loggers(level.upper())
    logging.captureWarnings(True)
    sys.excepthook = _log_uncaught


def _log_uncaught(kind: type[BaseException], error: BaseException, traceback: TracebackType | None) -> None:
    if issubclass(kind, KeyboardInterrupt):
        sys.__excepthook__(kind, error, traceback)
        return
    # through the redacting handler instead of straight to stderr
    logging.getLogger("bot").critical("stopped by an unexpected error", exc_info=(kind, error, traceback))
