"""Dates, times and decimal numbers in the reader's language (Babel), never English by default."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.i18n import FSI, PDI, Number, formats, lazy

AT = datetime(2026, 11, 28, 7, 25, tzinfo=UTC)


def test_a_moment_is_written_in_the_readers_language_in_utc_and_says_so():
    assert formats.when("en", AT) == "Nov 28, 7:25\u202fAM UTC"
    assert formats.when("ru", AT) == "28 нояб., 07:25 UTC"
    assert formats.when("es", AT) == "28 nov, 7:25 UTC"
    assert formats.when("ar", AT) == "28 نوفمبر، 7:25 ص التوقيت العالمي"
    # a naive time is the bot's clock, UTC
    assert formats.when("pt", AT.replace(tzinfo=None)) == formats.when("pt", AT)


def test_a_decimal_takes_the_languages_sign():
    assert [formats.decimal(language, 20.1) for language in ("en", "ru", "pt", "id", "ar")] == [
        "20.1", "20,1", "20,1", "20,1", "20.1"]
    assert formats.decimal("ru", 20.0) == "20"


def test_a_size_made_before_the_language_is_known_is_written_in_it_later():
    size = lazy("{size} MB", size=Number(20.1))
    assert str(size) == "20.1 MB"
    assert size.render("ru") == "20,1 МБ"
    assert size.render("ar") == f"{FSI}20.1{PDI} ميغابايت"
