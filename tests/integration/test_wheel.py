"""The package as an operator installs it: `pip install .` (not editable) into a fresh virtual environment,
run outside the checkout.

The package is installed from a copy of the project's files (so the build leaves nothing in the checkout),
without its dependencies, which the fresh environment sees through a .pth file naming this environment's
site-packages: only the build backend is fetched, and the source tree is never on the path. Every command
runs from a directory outside the checkout with PYTHONPATH unset.
"""

from __future__ import annotations

import ast
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: one worker runs them all, so the module's wheel and venv are built once, not once per xdist worker
pytestmark = pytest.mark.xdist_group("wheel")
TABLES = {"alembic_version", "jobs", "chats", "users"}


def _run(*command: str | Path, cwd: Path, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{command} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="session")  # not module: an xdist worker may end a module's fixtures between its tests
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with the wheel installed in it, and an environment to run it in (no checkout, no token)."""
    base = tmp_path_factory.mktemp("wheel")
    env = {key: value for key, value in os.environ.items()
           if key not in {"PYTHONPATH", "TELEGRAM_BOT_TOKEN", "DATABASE_URL", "VIRTUAL_ENV"}}
    source = base / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("bot", "migrations"):  # what the Dockerfile copies
        shutil.copytree(ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__"))

    venv = base / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=base, env=env)
    python = venv / "bin" / "python"
    # `pip install .`: an isolated build of a wheel, then its install (pip takes the build backend from its
    # index or cache)
    _run(python, "-m", "pip", "install", "--no-deps", "-q", ".", cwd=source, env=env, timeout=300)
    purelib = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])",
                        cwd=base, env=env).stdout.strip())
    # the dependencies, from this environment (its editable `bot` is a finder its own .pth installs, not read here)
    (purelib / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = base / "work"
    work.mkdir()
    return venv, env


def _tables(database: Path) -> set[str]:
    with sqlite3.connect(database) as connection:
        return {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_the_installed_package_is_the_wheel_not_the_checkout(installed):
    venv, env = installed
    found = _run(venv / "bin" / "python", "-c", "import bot, bot.store.db as db; print(bot.__file__); "
                 "print(db.MIGRATIONS_DIR); print(sorted(p.name for p in (db.MIGRATIONS_DIR / 'versions').glob('*.py')))",
                 cwd=venv.parent / "work", env=env).stdout.splitlines()
    assert Path(found[0]).is_relative_to(venv), found[0]
    # the top-level migrations/ folder ships inside the package
    assert Path(found[1]).is_relative_to(venv) and Path(found[1]).parts[-2:] == ("bot", "migrations"), found[1]
    assert sorted(path.name for path in (ROOT / "migrations" / "versions").glob("*.py")) == ast.literal_eval(found[2])


def test_the_mini_app_page_and_the_preview_sample_ship_in_the_wheel(installed):
    venv, env = installed
    found = _run(venv / "bin" / "python", "-c", "from importlib import resources; "
                 "print(sorted(p.name for p in resources.files('bot.http').joinpath('app').iterdir())); "
                 "print(resources.files('bot.operations').joinpath('preview-sample.jpg').is_file())",
                 cwd=venv.parent / "work", env=env).stdout.splitlines()
    assert found == ["['app.css', 'app.js', 'index.html']", "True"]


def test_python_m_bot_migrate_creates_the_schema_without_a_token(installed):
    venv, env = installed
    empty = venv.parent / "empty"
    empty.mkdir()  # nothing of the project here: the migrations can only come from the installed package
    database = empty / "data" / "module.db"
    done = _run(venv / "bin" / "python", "-m", "bot", "migrate", cwd=empty,
                env={**env, "DATABASE_URL": f"sqlite:///{database}"})
    assert "newest schema" in done.stdout
    assert TABLES <= _tables(database)
    with sqlite3.connect(database) as connection:
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    heads = sorted(path.name.split("_")[0] for path in (ROOT / "migrations" / "versions").glob("0*.py"))
    assert revision == heads[-1]


def test_the_console_script_helps_and_migrates(installed):
    venv, env = installed
    work = venv.parent / "work"
    script = venv / "bin" / "aiart-bot"
    helped = _run(script, "--help", cwd=work, env=env)
    assert helped.stdout.startswith("usage: aiart-bot") and "migrate" in helped.stdout
    database = work / "script.db"
    _run(script, "migrate", cwd=work, env={**env, "DATABASE_URL": f"sqlite+aiosqlite:///{database}"})
    assert TABLES <= _tables(database)


def test_the_console_script_runs_the_bot_past_its_migrations(installed):
    venv, env = installed
    work = venv.parent / "work"
    with socket.socket() as probe:  # a port nothing listens on: the Bot API is unreachable
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    database = work / "run" / "bot.db"
    run_env = {**env, "DATABASE_URL": f"sqlite:///{database}", "TELEGRAM_BOT_TOKEN": "123456:wheel-test-token",
               "TELEGRAM_API_URL": f"http://127.0.0.1:{port}"}
    process = subprocess.Popen([str(venv / "bin" / "aiart-bot")], cwd=work, env=run_env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            if database.exists() and TABLES <= _tables(database):
                break
            time.sleep(0.2)
        assert database.exists() and TABLES <= _tables(database), "the bot did not migrate its database"
    finally:
        if process.poll() is None:
            process.terminate()
        output, _ = process.communicate(timeout=30)
    assert "Traceback" not in output or "NetworkError" in output or "TimedOut" in output, output
    assert "ModuleNotFoundError" not in output and "wheel-test-token" not in output, output
