"""The one way tests, the chaos run and the benchmark start the fakes and the bot.

    async with fakes(task_seconds=0.2) as world:              # fake Bot API + sandbox on loopback
        values = bot_settings(world.telegram, world.sandbox, sqlite_url(tmp_path / "bot.db"))
        bot = InProcessBot(settings_of(values), world.telegram)   # run_bot in this event loop
        bot = BotProcess(values, tmp_path, world.telegram)        # or `python -m bot` in a subprocess
        await bot.start()                                         # returns once it polls for updates
        ...
        await bot.stop()

Settings are passed around as the environment names the operator uses (`TELEGRAM_BOT_TOKEN`, ...), so
one set of values serves both ways of running the bot. A subprocess gets this process's environment
without any bot setting, so neither the caller's variables nor a `.env` (its working directory is the
run's own) leak into a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import signal
import socket
import sys
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from bot.config import Settings
from bot.operations.registry import Extra
from bot.runtime import SHUTDOWN_GRACE_S, run_bot
from bot.sandbox import FaultConfig, Sandbox, SandboxConfig
from tests.fakes.telegram import FakeTelegram, TgFaults

ROOT = Path(__file__).resolve().parents[2]
SERVICE_KEY = "test-service-key-0123456789abcdef"
#: what the bot logs (at INFO) once it fetches updates, and while another replica fetches them
FETCHING_LINE = "this replica fetches updates now"
WAITING_LINE = "waiting to fetch updates"


@dataclass(frozen=True)
class World:
    """The two services the bot talks to, both served by this process."""

    telegram: FakeTelegram
    sandbox: Sandbox


def sandbox_config(**fields: object) -> SandboxConfig:
    """The sandbox's configuration with the harness's API key; it stands in for the real service, so it does
    not say it is a sandbox unless asked to (`announce=True`)."""
    return SandboxConfig(api_key=SERVICE_KEY, **{"announce": False, **fields})  # type: ignore[arg-type]


@contextlib.asynccontextmanager
async def fakes(*, task_seconds: float = 0.2, task_duration: Callable[[str, str], float] | None = None,
                task_duration_by_size: Callable[[str, str, int | None], float] | None = None, credits: int = 1000,
                faults: FaultConfig | None = None, rate_limits: bool = False,
                tg_faults: TgFaults | None = None) -> AsyncIterator[World]:
    """A started sandbox and fake Bot API, stopped when the block ends."""
    sandbox = Sandbox(sandbox_config(task_seconds=task_seconds, task_duration=task_duration,
                                     task_duration_by_size=task_duration_by_size, credits=credits,
                                     faults=faults or FaultConfig()))
    async with sandbox, FakeTelegram(rate_limits=rate_limits, faults=tg_faults) as telegram:
        yield World(telegram, sandbox)


def sqlite_url(path: Path | str) -> str:
    """The database URL of an SQLite file."""
    return f"sqlite+aiosqlite:///{path}"


#: not the `random` module's generator, which a test may seed: every xdist worker would then draw the same ports
_PORTS = random.SystemRandom()


def _ephemeral_ports() -> range:
    """The ports the kernel hands out as the local end of outgoing connections."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
    except (OSError, ValueError):
        low, high = "32768", "60999"
    return range(int(low), int(high) + 1)


def free_port() -> int:
    """A TCP port free on loopback right now (for a bot whose HTTP server a test must reach), outside the
    ephemeral range: a bot restarted on its port must find it free, and while it was down any outgoing
    connection on the machine could have been given an ephemeral port as its own."""
    ephemeral = _ephemeral_ports()
    while True:
        port = _PORTS.randrange(10_000, min(ephemeral.start, 32_768))
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port


WEBHOOK_PATH = "/telegram/webhook"


def bot_settings(telegram: FakeTelegram, sandbox: Sandbox | None = None, database_url: str | None = None,
                 *, webhook: bool = False, http_port: int | None = None, **overrides: object) -> dict[str, str]:
    """The bot's settings for this world, by environment name; without a sandbox the bot embeds its own.

    The bot's HTTP server listens on loopback: on `http_port`, or any free port. With `webhook`, the
    bot runs in webhook mode on a port of its own, and the fake may deliver to plain http on loopback.
    """
    values = {"TELEGRAM_BOT_TOKEN": telegram.token, "TELEGRAM_API_URL": telegram.url, "HTTP_HOST": "127.0.0.1",
              "HTTP_PORT": str(http_port if http_port is not None else free_port() if webhook else 0),
              # the tests' people make more than the operator's small default allows a day, and more of them
              # than the whole bot's default daily budget of free credits would serve
              "FREE_CREDITS_PER_DAY": "50", "FREE_CREDITS_DAILY_BUDGET": str(10**12)}
    if webhook:
        telegram.webhook.allow_http_loopback = True  # the explicit switch: Telegram itself wants HTTPS
        values["TELEGRAM_WEBHOOK_URL"] = f"http://127.0.0.1:{values['HTTP_PORT']}{WEBHOOK_PATH}"
    if sandbox is not None:
        values.update(AIART_API_KEY=sandbox.config.api_key, AIART_BASE_URL=sandbox.base_url,
                      AIART_STATIC_URL=sandbox.static_url)
    if database_url is not None:
        values["DATABASE_URL"] = database_url
    values.update({name.upper(): str(value) for name, value in overrides.items()})
    return values


def settings_of(values: Mapping[str, str]) -> Settings:
    """Settings for a bot run in this process (no `.env` read)."""
    return Settings(_env_file=None, **{name.lower(): value for name, value in values.items()})  # type: ignore[arg-type]


def process_env(values: Mapping[str, str]) -> dict[str, str]:
    """A subprocess's environment: this one without any bot setting, plus `values`."""
    inherited = {name: value for name, value in os.environ.items() if name.lower() not in Settings.model_fields}
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**inherited, "PYTHONPATH": path, "PYTHONUNBUFFERED": "1", **values}


def _command_menus(telegram: FakeTelegram) -> int:
    """How many times a bot has registered its command menu: once per start-up."""
    return sum(1 for call in telegram.calls if call.method == "setMyCommands" and call.status == 200)


def get_updates_calls(telegram: FakeTelegram) -> int:
    """How many times the bot has asked for updates (or, in webhook mode, set its webhook): a bot that asks is up."""
    return sum(1 for call in telegram.calls if call.method in ("getUpdates", "setWebhook"))


def http_url(values: Mapping[str, str]) -> str:
    """The root URL of the bot's HTTP server, for settings with a fixed HTTP_PORT."""
    return f"http://127.0.0.1:{values['HTTP_PORT']}"


async def wait_until(predicate: Callable[[], bool], timeout: float, what: str, bot: BotProcess | None = None,
                     every: float = 0.05) -> None:
    """Poll `predicate`; RuntimeError naming `what` (with the bot's log tail) if it stays false or the bot dies."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if bot is not None and bot.returncode is not None:
            raise RuntimeError(f"the bot exited ({bot.returncode}) while waiting for {what}:\n{bot.log_tail()}")
        if time.monotonic() > deadline:
            tail = f"\n{bot.log_tail()}" if bot is not None else ""
            raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}{tail}")
        await asyncio.sleep(every)


class InProcessBot:
    """`run_bot` in a task of the caller's event loop, stoppable and restartable."""

    def __init__(self, settings: Settings, telegram: FakeTelegram, *, grace: float = SHUTDOWN_GRACE_S,
                 extra_operations: Extra = ()) -> None:
        self.settings = settings
        self.telegram = telegram
        self.grace = grace
        self.extra_operations = extra_operations
        self._stop: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout: float = 20.0) -> None:
        """Start the bot and wait until it polls for updates (or fails to start)."""
        polls_before = get_updates_calls(self.telegram)
        self._stop = asyncio.Event()
        task = self._task = asyncio.create_task(run_bot(self.settings, self._stop, grace=self.grace,
                                                        extra_operations=self.extra_operations))
        await self.telegram.wait_for(lambda: get_updates_calls(self.telegram) > polls_before or task.done(), timeout)
        if task.done():
            task.result()  # surface a start-up error

    async def stop(self, timeout: float = 30.0) -> None:
        """Ask the bot to shut down and wait until it has."""
        if self._task is None or self._stop is None:
            return
        self._stop.set()
        await asyncio.wait_for(self._task, timeout)
        self._task = None


class BotProcess:
    """`python -m bot` as a subprocess: started, killed, stopped, restarted; its output in one log file."""

    def __init__(self, values: Mapping[str, str], workdir: Path, telegram: FakeTelegram) -> None:
        self.env = process_env(values)
        self.workdir = workdir
        self.telegram = telegram
        self.log_path = workdir / "bot.log"
        self.starts = 0
        self._log: IO[bytes] | None = None
        self._process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        """The running process's id."""
        return self._require().pid

    @property
    def returncode(self) -> int | None:
        """The exit code of the last process, None while it runs (or before the first start)."""
        return self._process.returncode if self._process is not None else None

    async def launch(self) -> None:
        """Start the process without waiting for anything."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._log = self._log or self.log_path.open("ab")
        self._log.write(f"\n===== start {self.starts + 1} =====\n".encode())
        self._log.flush()
        # cwd is the run's own directory: a developer's .env must not leak into the run
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", cwd=self.workdir, env=self.env, stdout=self._log,
            stderr=asyncio.subprocess.STDOUT)
        self.starts += 1

    async def start(self, timeout: float = 60.0) -> None:
        """Start the bot and wait until it polls for updates."""
        polls_before = get_updates_calls(self.telegram)
        await self.launch()
        await wait_until(lambda: get_updates_calls(self.telegram) > polls_before, timeout,
                         "the bot to poll for updates", self, every=0.02)

    async def start_replica(self, timeout: float = 60.0) -> None:
        """Start the bot and wait until it has set up (its command menu registered) and run a moment: a replica
        another one's poller lock keeps from polling never polls."""
        menus_before = _command_menus(self.telegram)
        await self.launch()
        await wait_until(lambda: _command_menus(self.telegram) > menus_before, timeout, "the bot to start", self,
                         every=0.05)
        await asyncio.sleep(0.5)  # its worker and heartbeat start right after
        if self.returncode is not None:
            raise RuntimeError(f"the bot exited ({self.returncode}) while starting:\n{self.log_tail()}")

    def fetches_updates(self) -> bool:
        """Whether this run of the bot is the replica that fetches updates (from its log)."""
        if self.returncode is not None:
            return False
        run = self.log_text().rsplit("===== start", 1)[-1]
        return run.rfind(FETCHING_LINE) > run.rfind(WAITING_LINE)

    async def wait(self, timeout: float = 60.0) -> int:
        """Wait for the process to exit by itself; its exit code."""
        return await asyncio.wait_for(self._started().wait(), timeout)

    async def kill(self) -> None:
        """SIGKILL: no clean-up of any kind."""
        process = self._require()
        process.send_signal(signal.SIGKILL)
        await process.wait()

    async def terminate(self, timeout: float = 30.0) -> int | None:
        """SIGTERM and wait; the exit code, or None when it had to be killed."""
        process = self._require()
        process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            await self.kill()
            return None

    async def close(self) -> None:
        """Stop a process still running (SIGTERM, then SIGKILL) and close the log."""
        if self.returncode is None and self._process is not None:
            await self.terminate()
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_text(self) -> str:
        """Everything the bot has written so far."""
        if self._log is not None:
            self._log.flush()
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        """The end of the bot's log, for error messages."""
        return "\n".join(self.log_text().splitlines()[-lines:]) or "(no log)"

    def _started(self) -> asyncio.subprocess.Process:
        if self._process is None:
            raise RuntimeError("the bot was never started")
        return self._process

    def _require(self) -> asyncio.subprocess.Process:
        process = self._started()
        if process.returncode is not None:
            raise RuntimeError("the bot is not running")
        return process


@contextlib.asynccontextmanager
async def running_process(values: Mapping[str, str], workdir: Path, telegram: FakeTelegram) -> AsyncIterator[BotProcess]:
    """`python -m bot` running against `telegram` until the block ends."""
    bot = BotProcess(values, workdir, telegram)
    try:
        await bot.start()
        yield bot
    finally:
        await bot.close()
