"""/settings reads the catalogue: an operation added there gets its rows with no edit to the settings handler."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

from bot.operations.catalogue import MenuButton
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue, parse_catalogue
from bot.tg.handlers.settings import style_choices, user_panel

STYLES = load_catalogue()


def rows(markup) -> list[tuple[str, str]]:
    return [(button.text, button.callback_data) for row in markup.inline_keyboard for button in row]


def test_an_added_operation_with_default_choices_gets_a_row_labelled_from_its_menu():
    operations = build_catalogue(STYLES)
    operations["cutout"] = replace(operations["removebg"], name="cutout", default_choices=("body", "object"),
                                   menu=(MenuButton("Cut out the person", "body"),))
    # nothing chosen, and the operation's own default (auto) is not among the choices: the first is offered
    assert ("By default: —", "set:df:cutout:body") in rows(user_panel("en", {}, operations, STYLES))
    # a choice with a menu label shows it; each press sets the next choice
    assert ("By default: Cut out the person", "set:df:cutout:object") in rows(
        user_panel("en", {"cutout_default": "body"}, operations, STYLES))
    # a choice the menu has no label for: the title and the argument text, translated like the rest
    assert ("By default: Remove background: object", "set:df:cutout:body") in rows(
        user_panel("en", {"cutout_default": "object"}, operations, STYLES))
    assert ("По умолчанию: Убрать фон: object", "set:df:cutout:body") in rows(
        user_panel("ru", {"cutout_default": "object"}, operations, STYLES))


def test_the_upscale_row_shows_the_operations_own_default_and_reads_an_older_numeric_setting():
    operations = build_catalogue(STYLES)
    assert ("By default: Upscale 2×", "set:df:upscale:4") in rows(user_panel("en", {}, operations, STYLES))
    assert ("By default: Upscale 4×", "set:df:upscale:2") in rows(
        user_panel("en", {"upscale_default": 4}, operations, STYLES))


def test_an_added_style_group_gets_a_row_and_one_shared_group_gets_one():
    data = json.loads(resources.files("bot.operations").joinpath("styles.json").read_text(encoding="utf-8"))
    styles = parse_catalogue({**data, "poster": {"styles": {"retro": {"label": "Retro", "template_id": "t-retro"}}}})
    operations = build_catalogue(styles)
    operations["poster"] = replace(operations["art"], name="poster", title="Poster", style_group="poster")
    operations["paint"] = replace(operations["art"], name="paint", title="Paint")  # shares art's group
    panel = rows(user_panel("en", {"style_poster": "retro"}, operations, styles))
    assert ("Poster style: Retro", "set:st:poster") in panel
    assert [data for _, data in panel if data == "set:st:art"] == ["set:st:art"]
    assert rows(style_choices("en", "poster", operations["poster"], styles)) == [
        ("Retro", "set:st:poster:retro"), ("ask", "set:st:poster:-")]


def test_an_operation_that_falls_back_to_a_style_shows_it_and_offers_no_ask():
    operations = build_catalogue(STYLES)
    generate = operations["generate"]
    assert ("Generate style: FLUX.2 Pro", "set:st:generate") in rows(user_panel("en", {}, operations, STYLES))
    assert "set:st:generate:-" not in {data for _, data in rows(style_choices("en", "generate", generate, STYLES))}


def test_every_settings_button_fits_telegrams_callback_limit():
    operations = build_catalogue(STYLES)
    panels = [user_panel(lang, {}, operations, STYLES) for lang in ("en", "ar")]
    panels += [style_choices("en", operation.style_group, operation, STYLES)
               for operation in operations.values() if operation.style_group]
    assert all(len(data.encode()) <= 64 for panel in panels for _, data in rows(panel))
