"""Validation the fake applies the way Telegram does: text formatting, keyboards, commands, photos, actions,
reactions."""

from __future__ import annotations

import html
import io
import re
import warnings
from dataclasses import dataclass
from typing import Any

from PIL import Image
from telegram.constants import ReactionEmoji

from tests.fakes.telegram_models import (
    MAX_CALLBACK_DATA_BYTES,
    MAX_PHOTO_ASPECT,
    MAX_PHOTO_SIDES_SUM,
    MAX_PHOTO_UPLOAD_BYTES,
    MAX_TEXT_LENGTH,
    Chat,
    bad_request,
)
from tests.fakes.telegram_params import str_param

_BUTTON_ACTIONS = (
    "callback_data", "url", "switch_inline_query", "switch_inline_query_current_chat",
    "switch_inline_query_chosen_chat", "login_url", "web_app", "pay", "callback_game", "copy_text",
)
_MAX_BUTTONS = 100
_COMMAND_NAME = re.compile(r"[a-z0-9_]{1,32}")
_MAX_COMMANDS = 100
_MAX_COMMAND_DESCRIPTION = 256
CHAT_ACTIONS = frozenset({
    "typing", "upload_photo", "record_video", "upload_video", "record_voice", "upload_voice",
    "upload_document", "choose_sticker", "find_location", "record_video_note", "upload_video_note",
})
REACTION_EMOJI = frozenset(e.value for e in ReactionEmoji)
_HTML_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*>")
_HTML_TAGS = frozenset({"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "tg-spoiler", "span", "a",
                        "code", "pre", "blockquote", "tg-emoji"})
#: MarkdownV2's reserved characters that never start markup: unescaped, Telegram refuses the text
_MD2_UNESCAPED = re.compile(r"(?<!\\)[#+\-={}.!]")
_MD2_MARKERS = re.compile(r"(?<!\\)(?:\|\||__|[*_~])")
_MD2_ESCAPE = re.compile(r"\\(.)")


def formatted(params: dict[str, Any], text_key: str, entities_key: str) -> tuple[str, list[dict[str, Any]] | None]:
    """The text (or caption) a user sees, and its entities as sent.

    The bot sends plain text, so the fake does not build entities from parse_mode; it refuses what Telegram
    surely refuses (an unknown parse_mode, HTML tags Telegram lacks or that do not match, a MarkdownV2
    character that is never markup left unescaped) and shows the text without its markup.
    """
    text = str_param(params, text_key) or ""
    entities = params.get(entities_key)
    if entities is not None:
        return text, entities or None
    parse_mode = params.get("parse_mode")
    mode = str(parse_mode).lower() if parse_mode else ""
    if mode == "html":
        return _html_text(text), None
    if mode == "markdownv2":
        reserved = _MD2_UNESCAPED.search(text)
        if reserved is not None:
            raise bad_request(f"can't parse entities: Character '{reserved.group()}' is reserved and must be "
                              "escaped with the preceding '\\'")
        return _MD2_ESCAPE.sub(r"\1", _MD2_MARKERS.sub("", text)), None
    if mode not in ("", "markdown"):
        raise bad_request(f"unsupported parse_mode {parse_mode!r}")
    return text, None


def message_text(params: dict[str, Any], *, too_long: str) -> tuple[str, list[dict[str, Any]] | None]:
    """A message's text and entities, refused when empty or over Telegram's length (`too_long` differs by method)."""
    text, entities = formatted(params, "text", "entities")
    if not text.strip():
        raise bad_request("message text is empty")
    if len(text) > MAX_TEXT_LENGTH:
        raise bad_request(too_long)
    return text, entities


def _html_text(text: str) -> str:
    """HTML-formatted text without its tags, if Telegram would parse it."""
    opened: list[str] = []
    for tag in _HTML_TAG.finditer(text):
        closing, name = tag.group(1) == "/", tag.group(2).lower()
        where = f"at byte offset {len(text[:tag.start()].encode())}"
        if name not in _HTML_TAGS:
            raise bad_request(f"can't parse entities: Unsupported start tag \"{name}\" {where}")
        if not closing:
            opened.append(name)
        elif not opened or opened.pop() != name:
            raise bad_request(f"can't parse entities: Unmatched end tag {where}")
    if opened:
        raise bad_request(f"can't parse entities: Can't find end tag corresponding to start tag \"{opened[-1]}\"")
    return html.unescape(_HTML_TAG.sub("", text))


def check_reply_markup(markup: Any, chat: Chat | None) -> dict[str, Any] | None:
    """The reply_markup if Telegram would accept it in `chat` (None: an inline message, for any chat); its 400
    otherwise."""
    if markup is None:
        return None
    if not isinstance(markup, dict):
        raise bad_request("object expected as reply markup")
    if "force_reply" in markup:
        # ForceReply: {"force_reply": true, "selective"?, "input_field_placeholder"? (1-64 characters)}
        placeholder = markup.get("input_field_placeholder")
        if markup["force_reply"] is not True or (placeholder is not None and not 1 <= len(str(placeholder)) <= 64):
            raise bad_request("can't parse reply keyboard markup JSON object")
        return markup
    if "inline_keyboard" not in markup:
        raise bad_request("reply keyboards are not modelled by the fake: the bot sends inline keyboards")
    _check_inline_keyboard(markup["inline_keyboard"], chat)
    return markup


def inline_markup_for_edit(markup: Any, chat: Chat | None) -> dict[str, Any] | None:
    """The keyboard an edit leaves on a message (`chat` None: an inline message); an empty keyboard means none."""
    checked = check_reply_markup(markup, chat)
    return checked if checked and checked["inline_keyboard"] else None


def _check_inline_keyboard(rows: Any, chat: Chat | None) -> None:
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise bad_request("BUTTON_DATA_INVALID")
    buttons = [button for row in rows for button in row]
    if len(buttons) > _MAX_BUTTONS:
        raise bad_request("reply markup is too long")
    for button in buttons:
        if not isinstance(button, dict) or not isinstance(button.get("text"), str) or not button["text"]:
            raise bad_request("BUTTON_DATA_INVALID")
        actions = [key for key in _BUTTON_ACTIONS if key in button]
        if len(actions) != 1:
            raise bad_request("BUTTON_DATA_INVALID")
        if "callback_data" in button:
            data = button["callback_data"]
            if not isinstance(data, str) or not 1 <= len(data.encode("utf-8")) <= MAX_CALLBACK_DATA_BYTES:
                raise bad_request("BUTTON_DATA_INVALID")
        if "url" in button:
            url = button["url"]
            if not isinstance(url, str) or not url.startswith(("http://", "https://", "tg://")):
                raise bad_request("BUTTON_URL_INVALID")
        if "web_app" in button:
            check_web_app_url(button["web_app"], "inline keyboard button", parse_error="inline keyboard button")
            if chat is None or chat.type != "private":
                raise bad_request("BUTTON_TYPE_INVALID")  # Mini App buttons work only in private chats


def check_web_app_url(web_app: Any, owner: str, *, parse_error: str) -> str:
    """The HTTPS url of a WebAppInfo, or Telegram's 400 (texts of the Bot API server and TDLib) naming `owner`."""
    if not isinstance(web_app, dict):
        raise bad_request(f'can\'t parse {parse_error}: Field "web_app" must be of type Object')
    url = web_app.get("url")
    if not isinstance(url, str):
        raise bad_request(f'can\'t parse {parse_error}: Can\'t find field "url"')
    if not url.lower().startswith("https://") or len(url) <= len("https://"):
        raise bad_request(f"{owner} Web App URL '{url}' is invalid: Only HTTPS links are allowed")
    return url


def check_commands(commands: Any) -> list[dict[str, str]]:
    """The BotCommand list as Telegram stores it; raises its 400 for a bad name or description."""
    if not isinstance(commands, list) or not all(isinstance(c, dict) for c in commands):
        raise bad_request("can't parse commands JSON object")
    if len(commands) > _MAX_COMMANDS:
        raise bad_request("too many commands")
    checked = []
    for command in commands:
        name, description = command.get("command"), command.get("description")
        if not isinstance(name, str) or not _COMMAND_NAME.fullmatch(name):
            raise bad_request("BOT_COMMAND_INVALID")
        if not isinstance(description, str) or not 1 <= len(description.strip()) <= _MAX_COMMAND_DESCRIPTION:
            raise bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
        checked.append({"command": name, "description": description})
    return checked


@dataclass(frozen=True)
class PhotoInfo:
    """Dimensions of a photo Telegram accepted."""

    width: int
    height: int


def inspect_photo(data: bytes) -> PhotoInfo:
    """Decode a photo upload the way sendPhoto judges it: size, decodability, dimensions."""
    if not data:
        raise bad_request("file must be non-empty")
    if len(data) > MAX_PHOTO_UPLOAD_BYTES:
        raise bad_request("PHOTO_INVALID_DIMENSIONS")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
            width, height = image.size
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise bad_request("PHOTO_INVALID_DIMENSIONS") from None
    except Exception:  # Pillow raises many types for garbage input; Telegram answers them all alike
        raise bad_request("IMAGE_PROCESS_FAILED") from None
    if width < 1 or height < 1 or width + height > MAX_PHOTO_SIDES_SUM:
        raise bad_request("PHOTO_INVALID_DIMENSIONS")
    if max(width, height) / min(width, height) > MAX_PHOTO_ASPECT:
        raise bad_request("PHOTO_INVALID_DIMENSIONS")
    try:
        image.load()
    except Exception:  # truncated or corrupt pixel data after a valid header
        raise bad_request("IMAGE_PROCESS_FAILED") from None
    return PhotoInfo(width, height)


def is_photo(data: bytes) -> bool:
    """Whether sendPhoto would accept these bytes."""
    try:
        inspect_photo(data)
    except Exception:
        return False
    return True


def check_chat_action(action: Any) -> str:
    """The chat action if Telegram knows it."""
    if action not in CHAT_ACTIONS:
        raise bad_request("wrong parameter action in request")
    return action


def check_reactions(reaction: Any) -> list[dict[str, Any]]:
    """The reaction list a bot may set: at most one standard emoji."""
    if reaction is None:
        return []
    if not isinstance(reaction, list) or not all(isinstance(r, dict) for r in reaction):
        raise bad_request("can't parse reaction types JSON object")
    if len(reaction) > 1:
        raise bad_request("REACTIONS_TOO_MANY")
    for item in reaction:
        if item.get("type") != "emoji" or item.get("emoji") not in REACTION_EMOJI:
            raise bad_request("REACTION_INVALID")
    return reaction
