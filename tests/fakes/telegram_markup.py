"""Text formatting as Telegram parses it: parse_mode HTML / MarkdownV2 / Markdown into text + entities."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any

from tests.fakes.telegram_models import bad_request

_HTML_TAGS = {
    "b": "bold", "strong": "bold", "i": "italic", "em": "italic", "u": "underline",
    "ins": "underline", "s": "strikethrough", "strike": "strikethrough", "del": "strikethrough",
    "tg-spoiler": "spoiler", "span": "spoiler", "a": "text_link", "code": "code", "pre": "pre",
    "blockquote": "blockquote", "tg-emoji": "custom_emoji",
}
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)((?:\s[^<>]*?)?)\s*/?>")
_TAG_NAME = re.compile(r"</?([^\s<>/]*)")
_ATTR = re.compile(r"""([A-Za-z][A-Za-z0-9-]*)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+)))?""")
_CHAR_REF = re.compile(r"&(lt|gt|amp|quot|#[0-9]+|#x[0-9A-Fa-f]+);")
_COMMAND = re.compile(r"(?<![^\s])/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{1,32})?(?![A-Za-z0-9_@])")

_MD2_RESERVED = set("_*[]()~`>#+-=|{}.!\\")
_MD2_TOGGLES = {"||": "spoiler", "__": "underline", "*": "bold", "_": "italic", "~": "strikethrough"}
_ENTITY_TITLES = {
    "bold": "Bold", "italic": "Italic", "underline": "Underline", "strikethrough": "Strikethrough",
    "spoiler": "Spoiler", "code": "Code", "pre": "Pre", "text_link": "TextUrl",
}


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, the unit of Telegram entity offsets."""
    return len(text.encode("utf-16-le")) // 2


def command_entities(text: str) -> list[dict[str, Any]]:
    """bot_command entities for every /command (incl. /command@bot) standing as a word."""
    return [
        {"type": "bot_command", "offset": utf16_len(text[: m.start()]), "length": utf16_len(m.group())}
        for m in _COMMAND.finditer(text)
    ]


def parse_formatted(
    text: str, parse_mode: Any, entities: Any
) -> tuple[str, list[dict[str, Any]] | None]:
    """Plain text and entities of a text or caption; explicit entities win over parse_mode."""
    if entities is not None:
        return text, _checked_entities(entities)
    if parse_mode is None or parse_mode == "":
        return text, None
    mode = str(parse_mode).lower()
    if mode == "html":
        return _parse_html(text)
    if mode == "markdownv2":
        return _parse_markdown(text, v2=True)
    if mode == "markdown":
        return _parse_markdown(text, v2=False)
    raise bad_request(f"unsupported parse_mode {parse_mode!r}")


def _checked_entities(entities: Any) -> list[dict[str, Any]]:
    valid = isinstance(entities, list) and all(
        isinstance(e, dict) and isinstance(e.get("type"), str)
        and isinstance(e.get("offset"), int) and isinstance(e.get("length"), int)
        for e in entities
    )
    if not valid:
        raise bad_request("can't parse entities JSON object")
    return entities or None


def _cant_parse(reason: str) -> Exception:
    return bad_request(f"can't parse entities: {reason}")


def _byte_offset(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))


@dataclass
class _Open:
    name: str
    type: str
    start: int
    byte_offset: int
    extra: dict[str, Any]


class _Output:
    """Accumulates plain text while tracking the UTF-16 offset entities refer to."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.offset = 0
        self.entities: list[dict[str, Any]] = []

    def add(self, chunk: str) -> None:
        self.parts.append(chunk)
        self.offset += utf16_len(chunk)

    def close(self, opened: _Open) -> None:
        length = self.offset - opened.start
        if length > 0 and opened.type:
            self.entities.append({"type": opened.type, "offset": opened.start, "length": length,
                                  **opened.extra})

    def result(self) -> tuple[str, list[dict[str, Any]] | None]:
        self.entities.sort(key=lambda e: (e["offset"], -e["length"]))
        return "".join(self.parts), self.entities or None


def _parse_html(text: str) -> tuple[str, list[dict[str, Any]] | None]:
    out = _Output()
    stack: list[_Open] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "<":
            i = _html_tag(text, i, out, stack)
        elif char == "&" and (ref := _CHAR_REF.match(text, i)):
            out.add(html.unescape(ref.group()))
            i = ref.end()
        else:
            out.add(char)
            i += 1
    if stack:
        raise _cant_parse(f'Can\'t find end tag corresponding to start tag "{stack[-1].name}"')
    return out.result()


def _html_tag(text: str, i: int, out: _Output, stack: list[_Open]) -> int:
    """Handle the tag at text[i] ('<'); returns the index after it."""
    offset = _byte_offset(text, i)
    match = _TAG.match(text, i)
    if match is None:
        name_match = _TAG_NAME.match(text, i)
        name = name_match.group(1) if name_match else ""
        raise _cant_parse(f'Unsupported start tag "{name}" at byte offset {offset}')
    closing, name, raw_attrs = match.group(1) == "/", match.group(2).lower(), match.group(3)
    if closing:
        if not stack:
            raise _cant_parse(f"Unexpected end tag at byte offset {offset}")
        opened = stack.pop()
        if opened.name != name:
            raise _cant_parse(
                f'Unmatched end tag at byte offset {offset}, expected "</{opened.name}>", found "</{name}>"'
            )
        out.close(opened)
        return match.end()
    if name not in _HTML_TAGS:
        raise _cant_parse(f'Unsupported start tag "{name}" at byte offset {offset}')
    attrs = {
        m.group(1).lower(): next((g for g in m.group(2, 3, 4) if g is not None), "")
        for m in _ATTR.finditer(raw_attrs)
    }
    entity_type, extra = _HTML_TAGS[name], {}
    if name == "span" and attrs.get("class") != "tg-spoiler":
        raise _cant_parse(f'Tag "span" must have class "tg-spoiler" at byte offset {offset}')
    if name == "a":
        if attrs.get("href"):
            extra = {"url": attrs["href"]}
        else:
            entity_type = ""  # Telegram keeps the text of a link without href, unformatted
    elif name == "tg-emoji":
        if "emoji-id" not in attrs:
            raise _cant_parse(f'Custom emoji entity must have "emoji-id" attribute at byte offset {offset}')
        extra = {"custom_emoji_id": attrs["emoji-id"]}
    elif name == "blockquote" and "expandable" in attrs:
        entity_type = "expandable_blockquote"
    elif name == "code" and stack and stack[-1].name == "pre" and attrs.get("class", "").startswith(
        "language-"
    ):
        stack[-1].extra["language"] = attrs["class"].removeprefix("language-")
        entity_type = ""  # the language belongs to the enclosing pre entity
    stack.append(_Open(name, entity_type, out.offset, offset, extra))
    return match.end()


def _parse_markdown(text: str, *, v2: bool) -> tuple[str, list[dict[str, Any]] | None]:
    out = _Output()
    stack: list[_Open] = []
    toggles = _MD2_TOGGLES if v2 else {"*": "bold", "_": "italic"}
    i = 0
    while i < len(text):
        code = stack[-1] if stack and stack[-1].type in ("code", "pre") else None
        if text[i] == "\\" and (v2 or (i + 1 < len(text) and text[i + 1] in "*_`[")):
            if i + 1 >= len(text):
                raise _cant_parse("Character '\\' is reserved and must be escaped with the preceding '\\'")
            out.add(text[i + 1])
            i += 2
        elif code is not None:
            if text.startswith(code.name, i):
                out.close(stack.pop())
                i += len(code.name)
            else:
                out.add(text[i])
                i += 1
        elif text.startswith("```", i):
            newline = text.find("\n", i + 3)
            header = text[i + 3:newline].strip() if newline != -1 else None
            extra: dict[str, Any] = {}
            body_start = i + 3
            if header is not None and "`" not in header and " " not in header:
                extra = {"language": header} if header else {}
                body_start = newline + 1  # the first line names the language
            stack.append(_Open("```", "pre", out.offset, _byte_offset(text, i), extra))
            i = body_start
        elif text[i] == "`":
            stack.append(_Open("`", "code", out.offset, _byte_offset(text, i), {}))
            i += 1
        elif text[i] == "[":
            stack.append(_Open("[", "text_link", out.offset, _byte_offset(text, i), {}))
            i += 1
        elif text[i] == "]" and stack and stack[-1].name == "[":
            i = _markdown_link_target(text, i, out, stack.pop(), v2)
        elif marker := next((m for m in toggles if text.startswith(m, i)), None):
            if stack and stack[-1].name == marker:
                out.close(stack.pop())
            elif any(o.name == marker for o in stack):
                raise _cant_parse(_unclosed(stack[-1], v2))
            else:
                stack.append(_Open(marker, toggles[marker], out.offset, _byte_offset(text, i), {}))
            i += len(marker)
        elif v2 and text[i] == ">" and (i == 0 or text[i - 1] == "\n"):
            end_of_line = text.find("\n", i)
            line = text[i + 1:] if end_of_line == -1 else text[i + 1:end_of_line]
            stack.append(_Open(">", "blockquote", out.offset, _byte_offset(text, i), {}))
            out_line, _ = _parse_markdown(line, v2=True)
            out.add(out_line)
            out.close(stack.pop())
            i = len(text) if end_of_line == -1 else end_of_line
        elif v2 and text[i] in _MD2_RESERVED:
            raise _cant_parse(
                f"Character '{text[i]}' is reserved and must be escaped with the preceding '\\'"
            )
        else:
            out.add(text[i])
            i += 1
    if stack:
        raise _cant_parse(_unclosed(stack[-1], v2))
    return out.result()


def _markdown_link_target(text: str, i: int, out: _Output, opened: _Open, v2: bool) -> int:
    """Close a [text] at text[i] == ']' with its (url); returns the index after the url."""
    if not text.startswith("(", i + 1):
        raise _cant_parse(_unclosed(opened, v2))
    end = i + 2
    url_chars: list[str] = []
    while end < len(text) and text[end] != ")":
        if text[end] == "\\" and end + 1 < len(text):
            end += 1
        url_chars.append(text[end])
        end += 1
    if end >= len(text):
        raise _cant_parse(_unclosed(opened, v2))
    opened.extra["url"] = "".join(url_chars)
    out.close(opened)
    return end + 1


def _unclosed(opened: _Open, v2: bool) -> str:
    if v2:
        title = _ENTITY_TITLES.get(opened.type, opened.type.title())
        return f"Can't find end of {title} entity at byte offset {opened.byte_offset}"
    return f"Can't find end of the entity starting at byte offset {opened.byte_offset}"
