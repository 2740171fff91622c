"""Translations: gettext catalogues shipped in the package, looked up by language.

Every text the bot shows is an English msgid marked with `N_` where it is defined (so Babel extracts
it) and rendered with `tr` (or `ntr` for counts) in the language of the person it is for.
"""

from __future__ import annotations

import functools
import gettext
from pathlib import Path

#: the languages with a catalogue; anything else is answered in English
LANGUAGES = ("en", "ru", "es", "pt", "id", "ar")
DEFAULT_LANGUAGE = "en"
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "bot"


def N_(message: str) -> str:  # gettext's conventional name for a marker
    """Mark `message` for extraction without translating it here (it is translated where shown)."""
    return message


def language_of(code: str | None) -> str:
    """The supported language for a Telegram `language_code` ("pt-br" -> "pt"; unknown -> English)."""
    base = (code or "").split("-")[0].split("_")[0].lower()
    return base if base in LANGUAGES else DEFAULT_LANGUAGE


@functools.cache
def _catalogue(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, localedir=LOCALE_DIR, languages=[language], fallback=True)


def tr(language: str, message: str, /, **fields: object) -> str:
    """`message` in `language`, with `fields` filled in."""
    text = _catalogue(language_of(language)).gettext(message)
    return text.format(**fields) if fields else text


def ntr(language: str, singular: str, plural: str, count: int, /, **fields: object) -> str:
    """The form of a message for `count` in `language` (its plural rules), with `count` and `fields` filled in."""
    text = _catalogue(language_of(language)).ngettext(singular, plural, count)
    return text.format(count=count, **fields)
