"""The catalogues: every msgid in the source translated in every language, placeholders and commands kept,
plural forms as each language needs, compiled .mo files up to date, and Arabic fields isolated."""

from __future__ import annotations

import re

import pytest

from bot.i18n import FSI, LRI, PDI, RLM, Text, catalogues, ntr, tr
from bot.tg import texts

LANGUAGES = catalogues.translated_languages()
SOURCE = catalogues.extract()
PLACEHOLDER = re.compile(r"\{(\w*)\}")
COMMAND = re.compile(r"(?<![\w/])/[a-z_]+")


def _ids() -> list:
    return [message.id for message in SOURCE if message.id]


def _marks(text: str) -> tuple[list[str], list[str]]:
    return sorted(PLACEHOLDER.findall(text)), sorted(COMMAND.findall(text))


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_msgid_in_the_source_is_translated(language):
    catalog = catalogues.read(language)
    missing = []
    for msgid in _ids():
        message = catalog.get(msgid)
        forms = (message.string if isinstance(message.string, tuple) else (message.string,)) if message else ("",)
        if not all(forms):
            missing.append(msgid)
    assert missing == [], f"{len(missing)} texts lack a {language} translation (python -m bot.i18n.catalogues update)"


@pytest.mark.parametrize("language", LANGUAGES)
def test_a_translation_keeps_its_placeholders_and_commands(language):
    broken = []
    for message in catalogues.read(language):
        if not message.id:
            continue
        original = message.id if isinstance(message.id, str) else message.id[-1]
        forms = message.string if isinstance(message.string, tuple) else (message.string,)
        broken += [(original, form) for index, form in enumerate(forms)
                   if form and _marks(form) != _marks(original) and not _says_its_number(language, index, form, original)]
    assert broken == []


def _says_its_number(language: str, index: int, form: str, original: str) -> bool:
    """Arabic's forms for zero, exactly one and two ("أقل من دقيقة", "مهمة واحدة", "مهمتان") say the number in
    words: no numeral."""
    return (language == "ar" and index in (0, 1, 2)
            and _marks(form.replace("{count}", "")) == _marks(original.replace("{count}", "")))


@pytest.mark.parametrize(("language", "forms"), [("ru", 3), ("es", 2), ("pt", 2), ("id", 1), ("ar", 6)])
def test_each_language_has_its_plural_forms(language, forms):
    catalog = catalogues.read(language)
    assert catalog.num_plurals == forms
    plurals = [message for message in catalog if isinstance(message.id, tuple)]
    assert plurals and all(len(message.string) == forms for message in plurals)


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_shipped_mo_is_the_po_compiled(language):
    # the messages, not the bytes: the header names the Babel release that compiled it
    shipped = catalogues.messages(catalogues.mo_path(language).read_bytes())
    assert shipped == catalogues.messages(catalogues.compiled(catalogues.read(language))), (
        "run python -m bot.i18n.catalogues compile")


def test_russian_counts_take_their_three_forms():
    assert [texts.cancelled_text(n, language="ru").split(".")[0] for n in (1, 3, 5, 11, 21, 22)] == [
        "Отменена 1 задача", "Отменены 3 задачи", "Отменено 5 задач", "Отменено 11 задач", "Отменена 21 задача",
        "Отменены 22 задачи"]


def test_arabic_counts_take_their_six_forms():
    def form(n: int) -> str:
        return texts.cancelled_text(n, language="ar").replace(FSI, "").replace(PDI, "").split(".")[0]
    assert [form(n) for n in (0, 1, 2, 5, 11, 100)] == [
        "أُلغيت 0 مهمة", "أُلغيت مهمة واحدة", "أُلغيت مهمتان", "أُلغيت 5 مهام", "أُلغيت 11 مهمة", "أُلغيت 100 مهمة"]
    assert ntr("ar", "You have used your {count} job for today.", "You have used your {count} jobs for today.",
               2).endswith("(مهمتان).")
    # credits are points, not a balance, and a number's noun agrees with it
    assert [texts.cost_note("ar", n).replace(FSI, "").replace(PDI, "") for n in (1, 2, 3, 11, 100)] == [
        "نقطة واحدة", "نقطتان", "3 نقاط", "11 نقطة", "100 نقطة"]


def test_no_arabic_plural_puts_a_numeral_before_a_dual():
    duals = re.compile(r"\{count\}\s+\S*(?:تان|تين|ان)(?=[\s.,،؛)]|$)")
    wrong = [form for message in catalogues.read("ar") if isinstance(message.id, tuple)
             for form in message.string if duals.search(form)]
    assert wrong == []


def test_arabic_isolates_each_field_and_each_command_but_no_other_language_does():
    said = tr("ar", texts.USAGE_LINE, reason="x", usage="/upscale [2|4]")
    assert f"{FSI}/upscale [2|4]{PDI}" in said and f"{FSI}x{PDI}" in said
    assert tr("ar", texts.UNKNOWN_COMMAND).count(f"{LRI}/help{PDI}") == 1
    assert tr("ar", "The upscale factor must be 2 or 4, for example /upscale 2").endswith(f"{LRI}/upscale 2{PDI}")
    for language in ("en", "ru", "es"):
        said = tr(language, texts.USAGE_LINE, reason="x", usage="/upscale") + tr(language, texts.UNKNOWN_COMMAND)
        assert not {FSI, LRI, RLM} & set(said)


def test_an_arabic_command_stays_whole_with_its_arguments_and_brackets_paired():
    # the bracketed placeholder words are isolated inside the command's isolate, so the brackets stay paired
    assert tr("ar", "/art <style> [description]") == f"{RLM}{LRI}/art <{FSI}النمط{PDI}> [{FSI}الوصف{PDI}]{PDI}"
    # a bracket closing around the command stays outside it
    assert f"{LRI}/cancel all{PDI})" in tr("ar", "Stop your jobs in this chat (admins: /cancel all)")
    # `@{bot}` joins the command, with its argument
    greeting = tr("ar", texts.GROUP_GREETING, bot="AiArtBot")
    assert f"{LRI}/upscale@{FSI}AiArtBot{PDI} 2{PDI})" in greeting


def test_every_arabic_line_starts_right_to_left_whatever_its_fields_hold():
    # a line of fields only, or one that opens with a command, gets a RIGHT-TO-LEFT MARK first
    assert tr("ar", "{description} · {cost}", description="Upscale ×2", cost="1").startswith(RLM)
    assert tr("ar", texts.USAGE_LINE, reason="timeout", usage="/upscale").split("\n")[0].startswith(RLM)
    # one that opens with an Arabic word outside any isolate needs none
    assert not tr("ar", texts.MENU_PROMPT).startswith(RLM)


def test_a_text_made_before_the_language_is_known_renders_in_it_later():
    later = Text("Padding can be at most {most} pixels a side.", {"most": 2000})
    assert str(later) == "Padding can be at most 2000 pixels a side."
    assert later.render("es") == "El margen puede ser de 2000 píxeles por lado como máximo."


def test_an_unknown_language_is_english():
    assert tr("xx", texts.MENU_PROMPT) == tr("en", texts.MENU_PROMPT) == texts.MENU_PROMPT


def test_a_queued_jobs_place_is_said_with_the_right_plural():
    from bot.operations.registry import build_catalogue
    from bot.operations.styles import load_catalogue
    from bot.tg.texts import queued_text

    upscale = build_catalogue(load_catalogue())["upscale"]
    assert "queued, 1 job ahead" in queued_text(upscale, {"factor": 2}, ahead=1)
    assert "queued, 3 jobs ahead" in queued_text(upscale, {"factor": 2}, ahead=3)
    assert "ahead" not in queued_text(upscale, {"factor": 2})


def _bare(text: str) -> str:
    """`text` without its isolates (innermost first, until none is left)."""
    isolated = re.compile(f"[{FSI}{LRI}][^{FSI}{LRI}{PDI}]*{PDI}")
    while (stripped := isolated.sub("", text)) != text:
        text = stripped
    return text


def _unbalanced(text: str) -> list[str]:
    """The isolates of `text` whose <>, [] or () do not pair up inside them."""
    wrong, starts = [], []
    for index, char in enumerate(text):
        if char in (FSI, LRI):
            starts.append(index)
        elif char == PDI and starts:
            inside = _bare(text[starts.pop() + 1:index])
            if any(inside.count(a) != inside.count(b) for a, b in ("<>", "[]", "()")):
                wrong.append(inside)
    return wrong


def test_every_arabic_text_isolates_its_numbers_and_commands():
    bare, unbalanced = [], []
    for message in catalogues.read("ar"):
        if not message.id:
            continue
        original = message.id if isinstance(message.id, str) else message.id[-1]
        fields = {name: "x" for name in PLACEHOLDER.findall(original) if name != "count"}
        if isinstance(message.id, tuple):
            said = [ntr("ar", *message.id, count, **fields) for count in (0, 1, 2, 3, 11, 100)]
        else:
            said = [tr("ar", message.id, **fields, **({"count": 3} if "{count}" in original else {}))]
        bare += [text for text in said if re.search(r"\d|(?<!\w)/[a-z]", _bare(text))]
        unbalanced += [piece for text in said for piece in _unbalanced(text)]
    assert bare == [] and unbalanced == []
