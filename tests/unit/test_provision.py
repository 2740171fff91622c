"""What session start-up decides to install, find or advise (tests/harness/provision.py), on made-up machines."""

from __future__ import annotations

import os
from pathlib import Path

from tests.harness.provision import (
    BROWSER_PACKAGES,
    Machine,
    Plan,
    find_browser,
    find_postgres,
    plan_browser,
    plan_postgres,
)

ROOT_WITH_APT = Machine(can_install=True)
NO_INSTALL = Machine(can_install=False)
NOTHING_INSTALLED: frozenset[str] = frozenset()


def executable(path: Path) -> Path:
    """An executable file at `path` (its folders made)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_a_machine_with_the_browser_and_fonts_needs_nothing() -> None:
    assert plan_browser("/usr/bin/chromium", True, NOTHING_INSTALLED, NO_INSTALL) == Plan()
    assert plan_browser("/usr/bin/chromium", True, NOTHING_INSTALLED, ROOT_WITH_APT) == Plan()


def test_root_with_apt_installs_what_is_missing_and_only_that() -> None:
    assert plan_browser(None, False, NOTHING_INSTALLED, ROOT_WITH_APT) == Plan(install=BROWSER_PACKAGES)
    assert plan_browser("/usr/bin/chromium", False, NOTHING_INSTALLED, ROOT_WITH_APT) == Plan(
        install=("fonts-noto-core", "fonts-noto-color-emoji", "fonts-dejavu-core"))
    assert plan_browser(None, True, NOTHING_INSTALLED, ROOT_WITH_APT) == Plan(install=("chromium",))
    # installed but off PATH: nothing to install; provision() then finds the package's executable
    assert plan_browser(None, True, frozenset({"chromium"}), ROOT_WITH_APT) == Plan(install=())


def test_without_root_one_line_says_what_to_install() -> None:
    both = plan_browser(None, False, NOTHING_INSTALLED, NO_INSTALL)
    assert both == Plan(advice="Chromium and fonts for the browser tests: "
                               "`sudo apt-get install chromium fonts-noto-core fonts-noto-color-emoji fonts-dejavu-core` (or set CHROMIUM)")
    assert plan_browser(None, True, NOTHING_INSTALLED, NO_INSTALL).advice == (
        "Chromium for the browser tests: `sudo apt-get install chromium` (or set CHROMIUM)")
    assert plan_browser("/opt/chrome", False, NOTHING_INSTALLED, NO_INSTALL).advice == (
        "fonts for the browser tests: `sudo apt-get install fonts-noto-core fonts-noto-color-emoji fonts-dejavu-core`")
    assert "\n" not in both.advice


def test_postgres_is_installed_used_or_advised() -> None:
    url = "postgresql+asyncpg://bot:bot@127.0.0.1:5432/bot_test"
    # a named server is used as it is, installed server or not, root or not
    assert plan_postgres(url, None, ROOT_WITH_APT) == Plan()
    assert plan_postgres(url, None, NO_INSTALL) == Plan()
    # a server's programs: the suite's own cluster, nothing to install
    assert plan_postgres("", Path("/usr/lib/postgresql/16/bin"), NO_INSTALL) == Plan()
    assert plan_postgres("", None, ROOT_WITH_APT) == Plan(install=("postgresql",))
    advice = plan_postgres("", None, NO_INSTALL).advice
    assert advice == ("PostgreSQL for the postgres tests: `sudo apt-get install postgresql` (they run a cluster of "
                      "their own) or set TEST_POSTGRES_URL (CONTRIBUTING.md)")


def test_without_install_even_root_installs_nothing() -> None:
    assert Machine.here({"PATH": os.environ["PATH"]}, install=False) == NO_INSTALL
    assert Machine.here({"PATH": ""}) == NO_INSTALL  # no apt-get on PATH


def test_postgres_is_found_on_path_through_links_else_in_debians_newest_version(tmp_path: Path) -> None:
    debian = tmp_path / "debian"
    for version in ("9", "13", "16"):
        executable(debian / version / "bin" / "initdb")
    assert find_postgres({"PATH": ""}, debian) == debian / "16" / "bin"
    elsewhere = executable(tmp_path / "opt" / "pg" / "bin" / "initdb")
    (tmp_path / "links").mkdir()
    (tmp_path / "links" / "initdb").symlink_to(elsewhere)
    assert find_postgres({"PATH": str(tmp_path / "links")}, debian) == elsewhere.parent
    assert find_postgres({"PATH": ""}, tmp_path / "none") is None


def test_the_browser_is_chromium_named_else_playwrights_else_one_on_path(tmp_path: Path) -> None:
    on_path = executable(tmp_path / "bin" / "chromium")
    playwright = executable(tmp_path / "ms-playwright" / "chromium-1187" / "chrome-linux" / "chrome")
    named = executable(tmp_path / "mine" / "chrome")
    env = {"PATH": str(on_path.parent), "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "ms-playwright")}
    assert find_browser({**env, "CHROMIUM": str(named)}) == str(named)
    assert find_browser(env) == str(playwright)
    assert find_browser({**env, "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "empty")}) == str(on_path)
    assert find_browser({"PATH": str(tmp_path / "empty"), "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path)}) is None
    assert find_browser({**env, "CHROMIUM": str(tmp_path / "gone")}) is None
