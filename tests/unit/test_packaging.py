"""What the wheel ships: every package under bot/, and the top-level migrations/ folder as bot.migrations."""

from __future__ import annotations

import tomllib
from pathlib import Path

import bot.store.db as db

ROOT = Path(__file__).resolve().parents[2]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_under_bot_is_listed_for_the_wheel():
    # the list is written out (the migrations' mapping rules out setuptools' finder): a new package must join it
    found = {".".join(path.parent.relative_to(ROOT).parts) for path in (ROOT / "bot").rglob("__init__.py")}
    assert set(_setuptools()["packages"]) == found | {"bot.migrations"}


def test_the_migrations_live_at_the_top_level_and_ship_as_bot_migrations():
    assert _setuptools()["package-dir"] == {"bot.migrations": "migrations"}
    assert not (ROOT / "bot" / "migrations").exists() and not (ROOT / "bot" / "store" / "migrations").exists()
    # run from the checkout, the bot (and every migration test) reads the top-level folder
    assert db.MIGRATIONS_DIR == ROOT / "migrations"
    assert db.alembic_config().get_main_option("script_location") == str(ROOT / "migrations")
