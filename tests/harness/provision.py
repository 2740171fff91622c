"""What the suite needs from the machine, found or installed when a test session starts: a browser and PostgreSQL.

Run as root on Debian (CI, a fresh machine) it installs what is missing with apt-get: Chromium and the fonts for
every language the bot speaks, and PostgreSQL's server. Without root it installs nothing and says in one line what
to install or which variable to set. Unless TEST_POSTGRES_URL names a server, the PostgreSQL tests run on a
throwaway cluster of the suite's own (its own data directory and port, fsync off), made once and reused: a cluster
the suite did not create is never changed. One process provisions at a time (a file lock), so pytest-xdist's
workers and a second run wait for the first and then find everything present, in milliseconds.

    python -m tests.harness.provision [--no-install]    # the same from a shell; prints what is missing
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import make_url

POSTGRES_URL_ENV = "TEST_POSTGRES_URL"
CHROMIUM_ENV = "CHROMIUM"
#: Debian's Chromium and fonts: Noto for Arabic and most scripts, Noto Color Emoji for the ✅ and ⏳ captions open
#: with, DejaVu as the Latin and Cyrillic fallback
BROWSER_PACKAGES = ("chromium", "fonts-noto-core", "fonts-noto-color-emoji", "fonts-dejavu-core")
FONT_PACKAGES = BROWSER_PACKAGES[1:]
POSTGRES_PACKAGES = ("postgresql",)
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome")
#: languages whose script the pages must render (fontconfig's names): Arabic, and Cyrillic for Russian
FONT_LANGUAGES = ("ar", "ru")
#: fontconfig patterns that must match some font besides the languages: an emoji (✅, U+2705)
FONT_PATTERNS = (*(f":lang={language}" for language in FONT_LANGUAGES), ":charset=2705")
DEBIAN_POSTGRES = Path("/usr/lib/postgresql")
#: the cluster's first choice of port, next to the 55432 CONTRIBUTING.md gives a container of one's own
FIRST_PORT = 55433
ROLE = "bot"
DATABASE = "bot_test"


class ProvisionError(RuntimeError):
    """Something the tests need could not be installed or started; the message says what and why."""


# --- what is here ---------------------------------------------------------------------------------------------


def playwright_chromium(env: Mapping[str, str]) -> str | None:
    """Playwright's own Chromium when `playwright install chromium` has put one in its browsers folder."""
    folder = env.get("PLAYWRIGHT_BROWSERS_PATH") or str(Path(env.get("HOME", "~")).expanduser() / ".cache/ms-playwright")
    if folder == "0":  # browsers inside the Python package: only Playwright itself can find them
        return None
    found = sorted(Path(folder).glob("chromium-*/chrome-linux*/chrome"))
    return str(found[-1]) if found else None


def find_browser(env: Mapping[str, str]) -> str | None:
    """The Chromium the browser tests will launch: $CHROMIUM, else Playwright's, else one on PATH."""
    named = env.get(CHROMIUM_ENV, "").strip()
    if named:
        return shutil.which(named, path=env.get("PATH"))
    return playwright_chromium(env) or next(
        filter(None, (shutil.which(name, path=env.get("PATH")) for name in BROWSER_NAMES)), None)


def fonts_present(env: Mapping[str, str]) -> bool:
    """Whether fontconfig knows a font for every script the pages show (no fontconfig: no fonts)."""
    fc_list = shutil.which("fc-list", path=env.get("PATH"))
    if fc_list is None:
        return False
    return all(subprocess.run([fc_list, pattern, "family"], capture_output=True, text=True,
                              check=False).stdout.strip() for pattern in FONT_PATTERNS)


def find_postgres(env: Mapping[str, str], debian: Path = DEBIAN_POSTGRES) -> Path | None:
    """The folder of PostgreSQL's server programs: initdb's on PATH, else Debian's newest version's."""
    on_path = shutil.which("initdb", path=env.get("PATH"))
    if on_path:  # a link on PATH leads to the folder that holds pg_ctl and psql too
        return Path(on_path).resolve().parent
    versions = sorted((path.parent for path in debian.glob("*/bin/initdb")), key=lambda bindir: int(
        bindir.parent.name) if bindir.parent.name.isdigit() else 0)
    return versions[-1] if versions else None


def installed_packages(names: tuple[str, ...], env: Mapping[str, str]) -> frozenset[str]:
    """Which of these Debian packages dpkg has installed (none without dpkg)."""
    dpkg_query = shutil.which("dpkg-query", path=env.get("PATH"))
    if dpkg_query is None:
        return frozenset()
    result = subprocess.run([dpkg_query, "-W", "-f=${Package} ${db:Status-Status}\\n", *names], capture_output=True,
                            text=True, check=False)
    return frozenset(line.split()[0] for line in result.stdout.splitlines() if line.endswith(" installed"))


def package_executable(package: str, name: str, env: Mapping[str, str]) -> str | None:
    """The executable `name` an installed Debian package ships (for a PATH that does not reach it)."""
    dpkg_query = shutil.which("dpkg-query", path=env.get("PATH"))
    if dpkg_query is None:
        return None
    listing = subprocess.run([dpkg_query, "-L", package], capture_output=True, text=True, check=False).stdout
    return next((path for path in listing.splitlines()
                 if Path(path).name == name and "/bin/" in path and os.access(path, os.X_OK)), None)


# --- what to do -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Machine:
    """What provisioning may do here: install Debian packages (as root with apt-get) or not."""

    can_install: bool

    @classmethod
    def here(cls, env: Mapping[str, str], *, install: bool = True) -> Machine:
        """This machine: it may install when asked to, running as root, with apt-get on PATH."""
        return cls(install and os.geteuid() == 0 and shutil.which("apt-get", path=env.get("PATH")) is not None)


@dataclass(frozen=True)
class Plan:
    """For one need: the Debian packages to install, or the one-line advice when it cannot be met here."""

    install: tuple[str, ...] = ()
    advice: str = ""


def plan_browser(browser: str | None, fonts: bool, installed: frozenset[str], machine: Machine) -> Plan:
    """Install Chromium and the fonts that are missing, or say how to."""
    wanted = (() if browser else BROWSER_PACKAGES[:1]) + (() if fonts else FONT_PACKAGES)
    if not wanted:
        return Plan()
    if machine.can_install:
        return Plan(install=tuple(package for package in wanted if package not in installed))
    what = "Chromium and fonts" if not browser and not fonts else "Chromium" if not browser else "fonts"
    hint = f"`sudo apt-get install {' '.join(wanted)}`" + ("" if browser else f" (or set {CHROMIUM_ENV})")
    return Plan(advice=f"{what} for the browser tests: {hint}")


def plan_postgres(url: str, bindir: Path | None, machine: Machine) -> Plan:
    """Use the named server, else the suite's own cluster: install the server when missing, or say how to."""
    if url or bindir is not None:
        return Plan()
    if machine.can_install:
        return Plan(install=POSTGRES_PACKAGES)
    return Plan(advice=f"PostgreSQL for the postgres tests: `sudo apt-get install postgresql` (they run a cluster "
                       f"of their own) or set {POSTGRES_URL_ENV} (CONTRIBUTING.md)")


def apt_install(packages: tuple[str, ...], say: Callable[[str], None]) -> None:
    """apt-get update and install, quietly unless it fails."""
    say(f"installing {' '.join(packages)} with apt-get (once)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"],
                    ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
        result = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if result.returncode:
            tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
            raise ProvisionError(f"`{' '.join(command)}` failed ({result.returncode}):\n{tail}")


# --- the suite's own PostgreSQL cluster -----------------------------------------------------------------------


def _free_port(first: int) -> int:
    """The first port from `first` that nothing listens on at loopback."""
    for port in range(first, first + 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise ProvisionError(f"no free port for PostgreSQL in {first}..{first + 199}")


@dataclass
class Cluster:
    """A throwaway PostgreSQL cluster in `home` (data/, its log, the role's URL), run by `user` (None: this user).

    Made with initdb, not Debian's pg_createcluster, so no other tool lists it or treats it as the machine's.
    """

    bindir: Path
    home: Path
    user: str | None = None
    first_port: int = FIRST_PORT
    _run_as: dict[str, object] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        if self.user is not None:  # root may not run the server: its owner runs initdb and pg_ctl
            account = pwd.getpwnam(self.user)
            self._run_as = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def url_file(self) -> Path:
        return self.home / "url"

    def _run(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """One of the server's programs, as the cluster's owner; ProvisionError with its output when it fails."""
        result = subprocess.run([str(self.bindir / args[0]), *args[1:]], capture_output=True, text=True,
                                cwd="/", env={**os.environ, "LC_ALL": "C", **(env or {})}, check=False,
                                **self._run_as)  # type: ignore[arg-type]
        if result.returncode:
            log = self.home / "server.log"
            tail = log.read_text(errors="replace").splitlines()[-10:] if log.exists() else []
            raise ProvisionError(f"{args[0]} failed ({result.returncode}): {result.stdout}{result.stderr}"
                                 + "\n".join(tail))
        return result

    def _make_home(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        self.home.chmod(0o700)
        if self._run_as:
            os.chown(self.home, int(self._run_as["user"]), int(self._run_as["group"]))  # type: ignore[call-overload]

    def _write(self, path: Path, text: str) -> None:
        """A file only the cluster's owner reads (a password, a URL with one)."""
        path.write_text(text)
        path.chmod(0o600)
        if self._run_as:
            os.chown(path, int(self._run_as["user"]), int(self._run_as["group"]))  # type: ignore[call-overload]

    def _initialise(self) -> None:
        """initdb with a random superuser password, then this cluster's settings: its port, loopback only,
        no Unix socket (its folder may not be writable), and no durability (nothing in it matters)."""
        if self.data.exists():  # an initdb that was interrupted
            shutil.rmtree(self.data)
        self._make_home()
        password_file = self.home / "superuser-password"
        self._write(password_file, secrets.token_hex(16))
        self._run("initdb", "-D", str(self.data), "-U", "postgres", f"--pwfile={password_file}",
                  "--auth=scram-sha-256", "--encoding=UTF8", "--locale=C")
        settings = {"port": str(_free_port(self.first_port)), "listen_addresses": "'127.0.0.1'",
                    "unix_socket_directories": "''", "fsync": "off", "synchronous_commit": "off",
                    "full_page_writes": "off"}
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("\n# the test suite's own throwaway cluster (tests/harness/provision.py)\n")
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    def port(self) -> int:
        """The port this cluster listens on (from its settings)."""
        lines = (self.data / "postgresql.conf").read_text().splitlines()
        return int(next(line.split("=")[1] for line in reversed(lines) if line.startswith("port =")))

    def running(self) -> bool:
        """Whether its server runs (pg_ctl status: 0 running, 3 not)."""
        return subprocess.run([str(self.bindir / "pg_ctl"), "status", "-D", str(self.data)], capture_output=True,
                              cwd="/", check=False, **self._run_as).returncode == 0  # type: ignore[arg-type]

    def _psql(self, *sql: str) -> str:
        password = (self.home / "superuser-password").read_text().strip()
        commands = [argument for statement in sql for argument in ("-c", statement)]
        return self._run("psql", "-X", "-qtA", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(self.port()),
                         "-U", "postgres", "-d", "postgres", *commands, env={"PGPASSWORD": password}).stdout

    def ensure(self) -> str:
        """Make, start and set up the cluster as far as it is not yet; the role's URL (TEST_POSTGRES_URL)."""
        if not (self.data / "PG_VERSION").exists() or not (self.data / "postgresql.conf").exists():
            self._initialise()
        if not self.running():
            self._run("pg_ctl", "start", "-D", str(self.data), "-l", str(self.home / "server.log"), "-w", "-t", "60")
        if not self.url_file.exists():
            password = secrets.token_hex(16)
            self._psql(f"DROP ROLE IF EXISTS {ROLE}",
                       f"CREATE ROLE {ROLE} LOGIN CREATEDB PASSWORD '{password}'",
                       f"CREATE DATABASE {DATABASE} OWNER {ROLE}")
            self._write(self.url_file, f"postgresql+asyncpg://{ROLE}:{password}@127.0.0.1:{self.port()}/{DATABASE}")
        return self.url_file.read_text().strip()

    def stop(self) -> None:
        """Stop its server (tests that make a cluster of their own clean up with this)."""
        if self.running():
            self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w")


def cluster_home(bindir: Path, env: Mapping[str, str]) -> tuple[Path, str | None]:
    """Where the suite's cluster lives, and who runs it: root's is the postgres account's, in its home."""
    version = bindir.parent.name if bindir.parent.name.isdigit() else "pg"
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres")
        return Path(account.pw_dir) / "aiart-bot-tests" / version, account.pw_name
    cache = Path(env.get("XDG_CACHE_HOME") or Path(env.get("HOME", "~")).expanduser() / ".cache")
    return cache / "aiart-bot-tests" / f"postgres-{version}", None


# --- the session's entry point --------------------------------------------------------------------------------


def lock_path(env: Mapping[str, str]) -> Path:
    """This user's provisioning lock file."""
    cache = Path(env.get("XDG_CACHE_HOME") or Path(env.get("HOME", "~")).expanduser() / ".cache")
    return cache / "aiart-bot-tests" / "provision.lock"


@contextlib.contextmanager
def provisioning_lock(env: Mapping[str, str]) -> Iterator[None]:
    """Held while one process provisions; the others (xdist workers, another run) wait here."""
    path = lock_path(env)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Provisioned:
    """The outcome: variables to set for the tests, and one-line advice per need not met (browser, postgres)."""

    env: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def summary(self) -> str:
        """Everything missing, in one line ("" when nothing is)."""
        return "; ".join(self.missing.values())


def provision(env: Mapping[str, str], *, install: bool = True, say: Callable[[str], None] = lambda _: None,
              debian_postgres: Path = DEBIAN_POSTGRES) -> Provisioned:
    """Find or install the browser and PostgreSQL (under the lock); what to export and what is missing."""
    with provisioning_lock(env):
        machine = Machine.here(env, install=install)
        exports: dict[str, str] = {}
        missing: dict[str, str] = {}

        browser, fonts = find_browser(env), fonts_present(env)
        plan = plan_browser(browser, fonts, installed_packages(BROWSER_PACKAGES, env), machine)
        if plan.advice:
            missing["browser"] = plan.advice
        else:
            if plan.install:
                apt_install(plan.install, say)
            if find_browser(env) is None:  # installed, but not where PATH looks
                found = package_executable("chromium", "chromium", env)
                if found is None:
                    raise ProvisionError("Chromium was installed but no chromium executable was found")
                exports[CHROMIUM_ENV] = found

        url = env.get(POSTGRES_URL_ENV, "").strip()
        bindir = find_postgres(env, debian_postgres)
        plan = plan_postgres(url, bindir, machine)
        if plan.advice:
            missing["postgres"] = plan.advice
        elif not url:
            if plan.install:
                apt_install(plan.install, say)
                bindir = find_postgres(env, debian_postgres)
                if bindir is None:
                    raise ProvisionError("PostgreSQL was installed but no initdb was found")
            assert bindir is not None
            home, user = cluster_home(bindir, env)
            exports[POSTGRES_URL_ENV] = Cluster(bindir, home, user).ensure()
        return Provisioned(exports, missing)


def main() -> None:
    """Provision from a shell; print the variables the tests get and, on one line, anything missing."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-install", action="store_true", help="install nothing, even as root")
    arguments = parser.parse_args()
    result = provision(os.environ, install=not arguments.no_install,
                       say=lambda line: print(f"provision: {line}", file=sys.stderr))
    for name, value in result.env.items():  # the URL's password stays in the cluster's own url file
        shown = make_url(value).render_as_string(hide_password=True) if name == POSTGRES_URL_ENV else value
        print(f"{name}={shown}")
    if result.missing:
        print(f"missing: {result.summary()}")
        sys.exit(1)


if __name__ == "__main__":
    main()
