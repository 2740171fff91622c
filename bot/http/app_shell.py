"""The first screen's texts in every language, built into the page so it is never blank: the API gives the
rest, but a page whose API cannot be reached must still say so, in the person's language and direction."""

from __future__ import annotations

import json

from bot.http.app_texts import FIRST_SCREEN, PAGE
from bot.i18n import LANGUAGES, RTL_LANGUAGES, tr


def first_screen_texts() -> str:
    """{language: {"rtl": bool, "texts": {name: text}}} as JSON that is safe inside a <script> element."""
    texts = {language: {"rtl": language in RTL_LANGUAGES,
                        "texts": {name: tr(language, PAGE[name]) for name in FIRST_SCREEN}}
             for language in LANGUAGES}
    return json.dumps(texts, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
