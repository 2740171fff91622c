"""The configuration tables in docs/configuration.md name every setting the bot reads, and only those."""

from __future__ import annotations

import re
from pathlib import Path

from bot.config import Settings

ROOT = Path(__file__).resolve().parents[2]
TABLE_FILE = ROOT / "docs" / "configuration.md"
_HEADER = "| variable | default | meaning |"


def table_rows(markdown: str) -> dict[str, str]:
    """Each variable the tables under a `| variable | default | meaning |` header name, with its row."""
    rows: dict[str, str] = {}
    in_table = False
    for line in markdown.splitlines():
        if line.strip() == _HEADER:
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        if in_table and not line.startswith("|---"):
            first_cell = line.split("|")[1]
            for name in re.findall(r"`([A-Z][A-Z0-9_]*)`", first_cell):
                rows[name] = line
    return rows


def documented() -> set[str]:
    """The variables the configuration tables name."""
    return set(table_rows(TABLE_FILE.read_text(encoding="utf-8")))


def settings_names() -> set[str]:
    """Every environment variable Settings reads, by its main name."""
    return {name.upper() for name in Settings.model_fields}


def test_every_setting_is_in_the_configuration_table():
    missing = settings_names() - documented()
    assert not missing, f"settings missing from {TABLE_FILE.name}: {sorted(missing)}"


def test_the_configuration_table_names_no_setting_that_does_not_exist():
    unknown = documented() - settings_names()
    assert not unknown, f"{TABLE_FILE.name} names settings the bot does not read: {sorted(unknown)}"


def test_the_readme_sends_operators_to_the_table():
    assert "docs/configuration.md" in (ROOT / "README.md").read_text(encoding="utf-8")
