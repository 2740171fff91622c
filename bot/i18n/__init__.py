"""Translations: gettext catalogues shipped in the package, looked up by language.

Every text the bot shows is an English msgid marked with `N_` where it is defined (so Babel extracts
it) and rendered with `tr` (or `ntr` for counts) in the language of the person it is for. Where a text
is made before its reader's language is known (an argument parser, an image check), it is a `Text`
(a msgid with its fields) and rendered later, where the language is known.

Right-to-left languages (Arabic) follow the Unicode bidirectional algorithm (UAX #9) by rule, not by hand:
* every filled field is a first-strong isolate (FSI … PDI), so a number, a Latin word or a user's text keeps
  its own direction and the punctuation around it stays where the translator put it;
* every /command written in the translation, with its arguments (`/art <النمط> [الوصف]`, `/cancel all`,
  `/upscale@{bot} 2`), is one left-to-right isolate (LRI … PDI) in the order it is typed, each bracketed
  placeholder word isolated inside it so its brackets stay paired; every number is an isolate too;
* every line starts as a right-to-left paragraph: a line whose first strong letter is not right-to-left
  (it opens with a command, a field, a number, or has no letter at all) gets a RIGHT-TO-LEFT MARK first,
  since both HTML's `dir="auto"` (which looks into isolates) and UAX #9's rule P2 (which skips them) then agree.
"""

from __future__ import annotations

import functools
import gettext
import re
import unicodedata
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

#: FIRST STRONG, LEFT-TO-RIGHT and RIGHT-TO-LEFT ISOLATE, POP DIRECTIONAL ISOLATE and RIGHT-TO-LEFT MARK (UAX #9)
FSI, LRI, RLI, PDI, RLM = "\u2068", "\u2066", "\u2067", "\u2069", "\u200f"
#: a /command (with `@bot` or `@{bot}`) and the arguments written after it: words of ASCII letters and digits
#: (never the punctuation that ends the sentence or closes a bracket around the command), or whole <…>/[…]
#: groups, whatever script their placeholder words are in
_COMMAND_RUN = re.compile(r"(?<![\w/{])/[A-Za-z_]+(?:@(?:\w+|\{\w+\}))?"
                          r"(?: (?:<[^<>\n]*>|\[[^\[\]\n]*\]"
                          r"|[A-Za-z0-9_|{}+-]*[A-Za-z0-9_}](?=[.,:;!?)\]\u060c\u061b\u061f\u00bb]*(?:\s|$))))*")
#: a number a translator wrote ("20", "2:1"), which a right-to-left sentence would otherwise reorder
_NUMBER = re.compile(r"(?<![\w{])\d+(?:[.,:×]\d+)*(?![\w}])")
#: a bracketed placeholder word inside a command run, isolated so the brackets around it stay paired
_BRACKETED = re.compile(r"([<\[])([^<>\[\]]*[^\x00-\x7f][^<>\[\]]*)([>\]])")
_STRONG_RTL = frozenset({"R", "AL"})


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


def _command(run: str) -> str:
    """A command run as one left-to-right unit, its bracketed words isolated inside it."""
    return f"{LRI}{_BRACKETED.sub(lambda match: match[1] + isolate(match[2]) + match[3], run)}{PDI}"


def _first_strong(line: str, *, skip_isolates: bool) -> str | None:
    """The bidi class (L, R or AL) of the first strong letter of `line`; with `skip_isolates`, outside isolates."""
    depth = 0
    for char in line:
        if char in (FSI, LRI, RLI):
            depth += 1
        elif char == PDI:
            depth = max(0, depth - 1)
        elif depth == 0 or not skip_isolates:
            kind = unicodedata.bidirectional(char)
            if kind in ("L", "R", "AL"):
                return kind
    return None


def _starts_right_to_left(line: str) -> str:
    """`line` with an RLM first unless it opens right to left both by UAX #9 (rule P2 skips isolates) and by
    HTML's dir="auto" (which looks into them)."""
    if not line or all(_first_strong(line, skip_isolates=skip) in _STRONG_RTL for skip in (True, False)):
        return line
    return RLM + line


def right_to_left_lines(text: str) -> str:
    """Every line of `text` as a right-to-left paragraph (for a right-to-left language's assembled texts)."""
    return "\n".join(_starts_right_to_left(line) for line in text.split("\n"))


def _fill(language: str, text: str, fields: Mapping[str, object]) -> str:
    rendered = {name: value.render(language) if isinstance(value, Text | Number) else value
                for name, value in fields.items()}
    if language not in RTL_LANGUAGES:
        return text.format(**rendered) if rendered else text
    pieces = []
    for part in re.split(f"({_COMMAND_RUN.pattern})", text):
        if _COMMAND_RUN.fullmatch(part):
            pieces.append(_command(part))
        else:
            pieces.append(_NUMBER.sub(lambda match: isolate(match.group(0)), part))
    text = "".join(pieces)
    rendered = {name: isolate(str(value)) for name, value in rendered.items()}
    return right_to_left_lines(text.format(**rendered) if rendered else text)


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


@dataclass(frozen=True)
class Number:
    """A decimal number to write as its reader's language does ("20.1", "20,1"), once the language is known."""

    value: float

    def render(self, language: str) -> str:
        from bot.i18n.formats import decimal  # Babel's data loads only when a number is written

        return decimal(language, self.value)

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
