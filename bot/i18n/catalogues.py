"""Keeping the catalogues: extract the msgids from the source, merge them into each language's .po, compile .mo.

A tool for contributors (it needs Babel, a development dependency); the bot itself reads only the
compiled .mo files with the standard library's gettext. After adding or changing a text:

    python -m bot.i18n.catalogues update     # bot.pot from the source; new msgids into every .po (empty)
    (translate the empty entries in bot/i18n/locale/<lang>/LC_MESSAGES/bot.po)
    python -m bot.i18n.catalogues compile    # the .mo files, committed with the .po files

The same with Babel's command line: `pybabel extract -F babel.cfg -k lazy -k nlazy:1,2 -k tr:2 -k ntr:2,3
-k ArgumentError -k StyleMissing -o bot/i18n/locale/bot.pot bot`, `pybabel update -D bot -d bot/i18n/locale
-i bot/i18n/locale/bot.pot`, `pybabel compile -D bot -d bot/i18n/locale`.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import read_mo, write_mo
from babel.messages.pofile import read_po, write_po

from bot.i18n import DEFAULT_LANGUAGE, DOMAIN, LANGUAGES, LOCALE_DIR

PACKAGE_DIR = LOCALE_DIR.parents[1]
#: the calls whose string arguments are msgids (N_ is Babel's default, like _ and ngettext)
KEYWORDS = {
    "N_": None, "lazy": None, "nlazy": (1, 2), "tr": (2,), "ntr": (2, 3),
    # errors made where the reader's language is unknown carry their msgid as the first argument
    "ArgumentError": None, "StyleMissing": None,
}
TEMPLATE = LOCALE_DIR / f"{DOMAIN}.pot"


def po_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def mo_path(language: str) -> Path:
    return LOCALE_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.mo"


def translated_languages() -> tuple[str, ...]:
    """The languages with a catalogue of their own (English is the msgids themselves)."""
    return tuple(language for language in LANGUAGES if language != DEFAULT_LANGUAGE)


def extract() -> Catalog:
    """Every msgid in the package's source, with where it is used."""
    catalog = Catalog(domain=DOMAIN, project="aiart-telegram-bot", charset="utf-8")
    for filename, lineno, message, comments, context in extract_from_dir(
            PACKAGE_DIR, method_map=[("**.py", "python")], keywords=KEYWORDS, comment_tags=("TRANSLATORS:",)):
        catalog.add(message, None, [(f"bot/{filename}", lineno)], auto_comments=comments, context=context)
    return catalog


def read(language: str) -> Catalog:
    with po_path(language).open("rb") as file:
        return read_po(file, locale=language, domain=DOMAIN)


def compiled(catalog: Catalog) -> bytes:
    """The .mo bytes of a catalogue, as `compile` writes them."""
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def messages(mo: bytes) -> tuple[str, dict]:
    """What a compiled catalogue says: its plural rule and its translations, without the header's tool version."""
    catalog = read_mo(io.BytesIO(mo))
    def frozen(value):  # read_mo gives a plural entry's ids and forms as lists
        return tuple(value) if isinstance(value, list | tuple) else value
    return catalog.plural_forms, {frozen(message.id): frozen(message.string) for message in catalog if message.id}


def update() -> None:
    """Write bot.pot from the source and merge it into every language's .po (new entries untranslated)."""
    template = extract()
    with TEMPLATE.open("wb") as file:
        write_po(file, template, omit_header=False, width=120, sort_output=False)
    for language in translated_languages():
        catalog = read(language)
        catalog.update(template, no_fuzzy_matching=True)
        with po_path(language).open("wb") as file:
            write_po(file, catalog, width=120, ignore_obsolete=True)


def compile_all() -> None:
    """Write every language's .mo from its .po."""
    for language in translated_languages():
        mo_path(language).write_bytes(compiled(read(language)))


def main(argv: list[str]) -> int:
    commands = {"update": update, "compile": compile_all}
    if len(argv) != 1 or argv[0] not in commands:
        print("usage: python -m bot.i18n.catalogues update|compile", file=sys.stderr)
        return 2
    commands[argv[0]]()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
