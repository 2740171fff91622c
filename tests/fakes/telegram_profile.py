"""The bot's profile texts per language: setMyDescription / setMyShortDescription and their get* methods.

As Telegram: at most 512 characters for the description and 120 for the short one (longer is a 400);
an empty or absent text removes the one for that language; get* answers the text for exactly that
language code ("" when none is set), and the default (no language_code) is stored under "".
"""

from __future__ import annotations

from typing import Any

from tests.fakes.telegram_models import bad_request
from tests.fakes.telegram_params import str_param

DESCRIPTION_MAX = 512
SHORT_DESCRIPTION_MAX = 120


class BotProfile:
    """The descriptions set per language code."""

    def __init__(self) -> None:
        self.descriptions: dict[str, str] = {}
        self.short_descriptions: dict[str, str] = {}

    @staticmethod
    def _set(store: dict[str, str], params: dict[str, Any], name: str, most: int, error: str) -> bool:
        text = str_param(params, name) or ""
        language = _language_code(params)
        if len(text) > most:
            raise bad_request(error)
        if text:
            store[language] = text
        else:
            store.pop(language, None)
        return True

    async def set_description(self, params: dict[str, Any], files: Any) -> bool:
        """setMyDescription."""
        return self._set(self.descriptions, params, "description", DESCRIPTION_MAX, "BOT_DESCRIPTION_INVALID")

    async def set_short_description(self, params: dict[str, Any], files: Any) -> bool:
        """setMyShortDescription."""
        return self._set(self.short_descriptions, params, "short_description", SHORT_DESCRIPTION_MAX,
                         "BOT_SHORT_DESCRIPTION_INVALID")

    async def get_description(self, params: dict[str, Any], files: Any) -> dict[str, str]:
        """getMyDescription."""
        return {"description": self.descriptions.get(_language_code(params), "")}

    async def get_short_description(self, params: dict[str, Any], files: Any) -> dict[str, str]:
        """getMyShortDescription."""
        return {"short_description": self.short_descriptions.get(_language_code(params), "")}


def _language_code(params: dict[str, Any]) -> str:
    code = str_param(params, "language_code") or ""
    if code and not (len(code) == 2 and code.isalpha() and code.islower()):
        raise bad_request("LANGUAGE_CODE_INVALID")  # a two-letter ISO 639-1 code, or none for the default
    return code
