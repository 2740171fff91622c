"""Telegram's retry_after is read through PTB's public property, whichever type PTB is set to give."""

from __future__ import annotations

import warnings
from datetime import timedelta

import pytest
from telegram.error import RetryAfter

from bot.tg.ratelimit import retry_seconds


@pytest.mark.parametrize("opt_in", [None, "true"], ids=["int", "timedelta"])
@pytest.mark.parametrize("given", [7, timedelta(seconds=7)], ids=["from-int", "from-timedelta"])
def test_retry_after_is_read_in_seconds_without_warnings(monkeypatch, opt_in, given):
    if opt_in is None:
        monkeypatch.delenv("PTB_TIMEDELTA", raising=False)
    else:
        monkeypatch.setenv("PTB_TIMEDELTA", opt_in)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # building the error may warn; reading it must not
        error = RetryAfter(given)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert retry_seconds(error) == 7.0
