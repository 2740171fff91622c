"""Each Mini App screen that queues an operation names it by a catalogue flag, never by its request's fields."""

from __future__ import annotations

from bot.http.app_api import AppApi
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue

#: the screens app.js offers that queue one operation each
SCREENS = ("frame", "paint")


def test_each_screen_has_exactly_one_operation() -> None:
    catalogue = build_catalogue(load_catalogue())
    assert sorted(op.mini_app for op in catalogue.values() if op.mini_app is not None) == list(SCREENS)


def test_the_api_no_longer_guesses_an_operation_from_its_request_fields() -> None:
    assert not hasattr(AppApi, "_taking")
