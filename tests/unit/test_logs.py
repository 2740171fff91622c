"""Logging: noisy loggers kept quiet, every known secret redacted from whatever does get written."""

from __future__ import annotations

import io
import logging
import sys
import warnings
from collections.abc import Callable, Iterator

import pytest

from bot.logs import NOISY_LOGGERS, RedactSecrets, redacting_handler, secret_forms, setup_logging

TOKEN = "123456:AAH-secret-token_value"
API_KEY = "service-api-key-0123456789"


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """Put the root logger, the noisy loggers' levels and the exception hook back after a test."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    levels = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    hook = sys.excepthook
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, old in levels.items():
        logging.getLogger(name).setLevel(old)
    sys.excepthook = hook
    logging.captureWarnings(False)


def written(secrets: list[str], emit: Callable[[logging.Logger], None]) -> str:
    """What the setup_logging handler writes for the records `emit` logs on a private logger."""
    stream = io.StringIO()
    logger = logging.getLogger("tests.logs.private")
    logger.handlers[:] = [redacting_handler(secrets, stream)]
    logger.propagate, logger.level = False, logging.DEBUG
    try:
        emit(logger)
    finally:
        logger.handlers[:] = []
    return stream.getvalue()


def test_message_and_arguments_are_redacted():
    text = written([TOKEN, API_KEY], lambda log: log.info("GET %s/bot%s/getMe with %r", "http://x", TOKEN,
                                                          {"Authorization": f"Bearer {API_KEY}"}))
    assert TOKEN not in text and API_KEY not in text
    assert "http://x/bot***/getMe" in text


def test_the_percent_encoded_token_is_redacted_too():
    encoded = TOKEN.replace(":", "%3A")
    text = written([TOKEN], lambda log: log.warning("fetching http://x/file/bot%s/photo.jpg", encoded))
    assert encoded not in text and "123456" not in text


def test_tracebacks_and_stacks_are_redacted():
    def emit(log: logging.Logger) -> None:
        try:
            raise RuntimeError(f"The token `{TOKEN}` was rejected by the server.")
        except RuntimeError:
            log.exception("start-up failed", stack_info=True)

    text = written([TOKEN], emit)
    assert "RuntimeError: The token `***` was rejected" in text
    assert TOKEN not in text


def test_the_secret_part_of_a_bot_token_is_redacted_alone_too():
    secret_part = TOKEN.split(":", 1)[1]
    text = written([TOKEN], lambda log: log.info("token=%s part=%s", TOKEN, secret_part))
    assert text.rstrip().endswith("token=*** part=***")


def test_short_or_empty_secrets_are_ignored_not_everywhere_redacted():
    assert secret_forms(["", "abc", "ab:cd"]) == []
    text = written(["", "abc"], lambda log: log.info("abc def"))
    assert "abc def" in text


def test_a_record_logged_twice_stays_redacted():
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "token %s", (TOKEN,), None)
    redact = RedactSecrets([TOKEN])
    assert redact.filter(record) and redact.filter(record)
    assert record.getMessage() == "token ***"


def test_setup_logging_quiets_url_loggers_even_at_debug_and_redacts_what_gets_through(restored_logging, capsys):
    setup_logging("DEBUG", [TOKEN, API_KEY])
    for name in ("httpx", "httpcore", "telegram", "telegram.Bot", "telegram.ext.Updater"):
        assert not logging.getLogger(name).isEnabledFor(logging.INFO), name
    assert logging.getLogger("bot.jobs").isEnabledFor(logging.DEBUG)
    logging.getLogger("httpx").info('HTTP Request: POST http://t/bot%s/getUpdates "HTTP/1.1 200 OK"', TOKEN)
    logging.getLogger("telegram.Bot").debug("Set Bot API URL: http://t/bot%s", TOKEN)
    logging.getLogger("httpx").warning("retrying http://t/bot%s/sendPhoto", TOKEN)
    logging.getLogger("bot.jobs").debug("key %s", API_KEY)
    err = capsys.readouterr().err
    assert "getUpdates" not in err and "Set Bot API URL" not in err
    assert "retrying http://t/bot***/sendPhoto" in err
    assert "key ***" in err
    assert TOKEN not in err and API_KEY not in err


def test_setup_logging_at_error_keeps_noisy_warnings_out_too(restored_logging, capsys):
    setup_logging("ERROR", [TOKEN])
    logging.getLogger("httpx").warning("retrying")
    assert "retrying" not in capsys.readouterr().err


def test_uncaught_exceptions_and_warnings_are_written_redacted(restored_logging, capsys):
    setup_logging("INFO", [TOKEN])
    try:
        raise ValueError(f"The token `{TOKEN}` was rejected by the server.")
    except ValueError:
        sys.excepthook(*sys.exc_info())
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn(f"deprecated call with {TOKEN}", UserWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert "ValueError: The token `***` was rejected" in err
    assert "deprecated call with ***" in err
    assert TOKEN not in err
