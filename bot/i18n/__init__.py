"""Translations: gettext catalogues shipped in the package, looked up by language.

Every text the bot shows is an English msgid marked with `N_` where it is defined (so Babel extracts
it) and rendered with `tr` (or `ntr` for counts) in the language of the person it is for. Where a text
is made before its reader's language is known (an argument parser, an image check), it is a `Text`
(a msgid with its fields) and rendered later, where the language is known.

Right-to-left languages (Arabic): `tr` wraps every filled field, and every /command and number written in
the translation, in Unicode isolates (FSI … PDI), so numbers, commands and Latin words keep their own
direction and the punctuation around them stays where the translator put it.
"""

from __future__ import annotations

import functools
import gettext
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

#: the languages with a catalogue; anything else is answered in English
LANGUAGES = ("en", "ru", "es", "pt", "id", "ar")
DEFAULT_LANGUAGE = "en"
#: each language's own name, as the /language picker shows it
LANGUAGE_NAMES = {"en": "English", "ru": "Русский", "es": "Español", "pt": "Português",
                  "id": "Bahasa Indonesia", "ar": "العربية"}
RTL_LANGUAGES = frozenset({"ar"})
LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "bot"

#: FIRST STRONG ISOLATE and POP DIRECTIONAL ISOLATE (Unicode bidi, UAX #9)
FSI, PDI = "\u2068", "\u2069"
#: a /command and the Latin words, numbers and brackets written right after it ("/upscale 2", "/cancel all"),
#: or a number a translator wrote ("20", "2:1"), which a right-to-left sentence would otherwise reorder
_COMMAND_RUN = re.compile(r"(?<![\w/{])/[A-Za-z_]+(?:@\w+)?(?: [\x21-\x7a|~]+(?<![.,:;]))*"
                          r"|(?<![\w{])\d+(?:[.,:×]\d+)*(?![\w}])")


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


def isolate(text: str) -> str:
    """`text` as a bidi isolate: it keeps its own direction inside right-to-left text."""
    return f"{FSI}{text}{PDI}"


def _fill(language: str, text: str, fields: Mapping[str, object]) -> str:
    rendered = {name: value.render(language) if isinstance(value, Text) else value for name, value in fields.items()}
    if language in RTL_LANGUAGES:
        text = _COMMAND_RUN.sub(lambda match: isolate(match.group(0)), text)
        rendered = {name: isolate(str(value)) for name, value in rendered.items()}
    return text.format(**rendered) if rendered else text


def tr(language: str, message: str, /, **fields: object) -> str:
    """`message` in `language`, with `fields` filled in (a field that is a `Text` is rendered in it too)."""
    language = language_of(language)
    return _fill(language, _catalogue(language).gettext(message), fields)


def ntr(language: str, singular: str, plural: str, count: int, /, **fields: object) -> str:
    """The form of a message for `count` in `language` (its plural rules), with `count` and `fields` filled in."""
    language = language_of(language)
    return _fill(language, _catalogue(language).ngettext(singular, plural, count), {"count": count, **fields})


@dataclass(frozen=True)
class Text:
    """A message to render later, in its reader's language: a msgid (and its plural) with its fields.

    `str()` gives the English text (for logs and records); `render` gives it in a language.
    """

    msgid: str
    fields: Mapping[str, object] = field(default_factory=dict)
    plural: str | None = None
    count: int = 1

    def render(self, language: str) -> str:
        """The text in `language`."""
        if self.plural is not None:
            return ntr(language, self.msgid, self.plural, self.count, **self.fields)
        return tr(language, self.msgid, **self.fields)

    def __str__(self) -> str:
        return self.render(DEFAULT_LANGUAGE)


def lazy(message: str, /, **fields: object) -> Text:
    """A message with its fields, rendered later (extracted like `N_`)."""
    return Text(message, dict(fields))


def nlazy(singular: str, plural: str, count: int, /, **fields: object) -> Text:
    """A message with a count, rendered later in the plural form its reader's language needs."""
    return Text(singular, dict(fields), plural, count)


def render(language: str, message: str | Text) -> str:
    """A text that may already be plain (a user's own words, a service's reason) or a `Text`, in `language`."""
    return message.render(language) if isinstance(message, Text) else message
