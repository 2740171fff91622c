"""Argument parsing that several operations share: a description, a style as the first word, leading options."""

from __future__ import annotations

from collections.abc import Callable

from bot.aiart.models import MAX_PROMPT_CHARS
from bot.i18n import N_
from bot.operations.catalogue import ArgumentError, StyleMissing
from bot.operations.styles import Style, StyleGroup

#: what a styled parser says when no style is typed (the bot shows a style keyboard under it)
PICK_STYLE = N_("Pick a style below.")


def check_prompt(prompt: str, *, example: str) -> str:
    """A description with its white space folded; an ArgumentError when it is empty or too long."""
    prompt = " ".join(prompt.split())
    if not prompt:
        raise ArgumentError(N_("Describe what you want, for example {example}"), example=example)
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ArgumentError(N_("That description is {length} characters long; please keep it under {most}."),
                            length=len(prompt), most=MAX_PROMPT_CHARS)
    return prompt


def first_style(group: StyleGroup, words: list[str], unknown: str) -> Style:
    """The style the first word names: StyleMissing when nothing is typed, `unknown` (a msgid) when it names none."""
    if not words:
        raise StyleMissing(PICK_STYLE)
    style = group.get(words[0])
    if style is None:
        raise ArgumentError(unknown, style=repr(words[0][:32]), styles=", ".join(group.names()))
    return style


def leading_words(words: list[str], **kinds: Callable[[str], bool]) -> dict[str, str | None]:
    """Takes the leading words that each name one of `kinds` once, in any order ("anime 16:9 a cat"): the word
    (lower-cased) found for each kind, or None; `words` keeps the rest."""
    found: dict[str, str | None] = dict.fromkeys(kinds)
    while words:
        word = words[0].lower()
        kind = next((kind for kind, test in kinds.items() if found[kind] is None and test(word)), None)
        if kind is None:
            break
        found[kind] = word
        words.pop(0)
    return found
