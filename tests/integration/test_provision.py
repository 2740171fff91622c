"""Session start-up on a machine whose PATH has no Chromium: pytest run in a subprocess on two small tests, one
needing the browser; and the suite's own PostgreSQL cluster made, reused and stopped in a folder of its own.

The machine's packages stay as they are (other runs use them): "no Chromium" is a PATH without it, and "no
root" is `--no-install`, which installs nothing even as root.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
from sqlalchemy import make_url

from tests.harness.provision import BROWSER_NAMES, Cluster, cluster_home, find_postgres

ROOT = Path(__file__).resolve().parents[2]
#: one worker runs them, one after another: each starts a pytest of its own, which takes seconds of CPU
pytestmark = [pytest.mark.xdist_group("provision"), pytest.mark.timeout(300)]
TWO_TESTS = '''
def test_plain():
    assert True


def test_needs_the_browser(browser):
    assert browser is not None
'''


@pytest.fixture(scope="module")
def path_without_chromium(tmp_path_factory: pytest.TempPathFactory) -> str:
    """This PATH, with each folder holding a Chromium replaced by links to everything else in it."""
    folders = []
    for folder in map(Path, os.environ["PATH"].split(os.pathsep)):
        if not any((folder / name).exists() for name in BROWSER_NAMES):
            folders.append(str(folder))
            continue
        links = tmp_path_factory.mktemp("path")
        for program in folder.iterdir():
            if program.name not in BROWSER_NAMES:
                (links / program.name).symlink_to(program)
        folders.append(str(links))
    return os.pathsep.join(folders)


def run_pytest(tmp_path: Path, path: str, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """This project's pytest, session start-up included, on TWO_TESTS with this PATH and no CHROMIUM."""
    (tmp_path / "test_two.py").write_text(TWO_TESTS)
    inherited = {name: value for name, value in os.environ.items()
                 if name not in ("CHROMIUM", "CI", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST")}
    environment = {**inherited, "PATH": path, "PYTHONPATH": str(ROOT),
                   "PLAYWRIGHT_BROWSERS_PATH": str(tmp_path / "no-playwright-browsers"), **env}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
         "-p", "tests.conftest", "-n", "0", "-p", "no:cacheprovider", *options, str(tmp_path / "test_two.py")],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=240, check=False)


def test_without_chromium_and_without_installing_one_line_says_what_to_install(
        tmp_path: Path, path_without_chromium: str) -> None:
    done = run_pytest(tmp_path, path_without_chromium, "--no-install")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout
    [advice] = [line for line in done.stdout.splitlines() if "this machine lacks" in line]
    # (a machine without PostgreSQL as well would have that said on the same line, after a "; ")
    assert advice.startswith("1 skipped, as this machine lacks Chromium for the browser tests: "
                             "`sudo apt-get install chromium` (or set CHROMIUM)"), done.stdout


def test_under_ci_the_test_that_needs_a_missing_browser_fails(tmp_path: Path, path_without_chromium: str) -> None:
    done = run_pytest(tmp_path, path_without_chromium, "--no-install", CI="1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed, 1 error" in done.stdout  # in set-up, before the browser is started
    assert "CI is set but this machine lacks Chromium for the browser tests" in done.stdout


def test_as_root_the_installed_chromium_is_found_off_path_else_it_says_what_to_install(
        tmp_path: Path, path_without_chromium: str) -> None:
    done = run_pytest(tmp_path, path_without_chromium)
    assert done.returncode == 0, done.stdout + done.stderr
    if os.geteuid() == 0:  # apt-get may install (Debian's chromium is on this machine: found where it put it)
        assert "2 passed" in done.stdout and "skipped" not in done.stdout, done.stdout
    else:
        assert "1 passed, 1 skipped" in done.stdout and "this machine lacks Chromium" in done.stdout


@pytest.fixture
def cluster_folder() -> Iterator[Path]:
    """A folder the cluster's owner can reach (pytest's own are private to this user)."""
    folder = Path(tempfile.mkdtemp(prefix="provision-"))
    folder.chmod(0o755)
    try:
        yield folder / "cluster"
    finally:
        shutil.rmtree(folder, ignore_errors=True)


async def _settings(url: str) -> tuple[str, str]:
    connection = await asyncpg.connect(make_url(url).set(drivername="postgresql").render_as_string(
        hide_password=False))
    try:
        return await connection.fetchval("SHOW fsync"), await connection.fetchval("SELECT current_user")
    finally:
        await connection.close()


@pytest.mark.postgres  # needs PostgreSQL's server programs, which provide the suite's PostgreSQL
def test_the_suites_own_cluster_is_made_once_on_its_own_port_and_reused(cluster_folder: Path) -> None:
    bindir = find_postgres(os.environ)
    assert bindir is not None, "PostgreSQL's server programs are installed here (provisioned at session start)"
    owner = cluster_home(bindir, os.environ)[1]
    cluster = Cluster(bindir, cluster_folder, owner, first_port=56433)
    try:
        url = cluster.ensure()
        assert asyncio.run(_settings(url)) == ("off", "bot")  # its own settings: nothing in it matters
        named = os.environ.get("TEST_POSTGRES_URL")
        if named:
            assert make_url(url).port != make_url(named).port
        made = (cluster.data / "PG_VERSION").stat().st_mtime_ns

        started = time.monotonic()
        assert cluster.ensure() == url
        assert time.monotonic() - started < 5  # nothing to do but look
        assert (cluster.data / "PG_VERSION").stat().st_mtime_ns == made

        cluster.stop()
        assert not cluster.running()
        assert cluster.ensure() == url  # started again, not made again
        assert asyncio.run(_settings(url))[1] == "bot"
    finally:
        cluster.stop()
