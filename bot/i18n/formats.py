"""Dates, times and decimal numbers (sizes, megapixels) as each language writes them (Babel's CLDR data).

The bot's clocks are UTC and Telegram does not tell a bot a person's time zone, so times are given in UTC
and say so, in the reader's language's own words for it.
"""

from __future__ import annotations

from datetime import UTC, datetime

from babel import Locale
from babel.dates import format_skeleton, format_time, get_datetime_format
from babel.numbers import format_decimal

from bot.i18n import language_of


def _locale(language: str) -> Locale:
    return Locale.parse(language_of(language))


def when(language: str, at: datetime) -> str:
    """A moment as a short date and time in UTC, with the zone named: "28 нояб., 07:25 UTC"."""
    at = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    locale = _locale(language)
    day = format_skeleton("MMMd", at, tzinfo=UTC, locale=locale)
    time = format_time(at, "short", tzinfo=UTC, locale=locale)
    zone = format_time(at, "z", tzinfo=UTC, locale=locale)
    return get_datetime_format("medium", locale=locale).replace("{1}", day).replace("{0}", f"{time} {zone}")


def decimal(language: str, number: float) -> str:
    """A number with the language's decimal sign ("20,1" in Russian), at most one decimal."""
    return format_decimal(number, format="#,##0.#", locale=_locale(language))
