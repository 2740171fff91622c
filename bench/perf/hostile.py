"""Hostile Mini App traffic against the real bot (issue 28): another person's /help, the database, the bot's memory.

The real bot runs as a subprocess (long polling, SQLite, the Mini App on) against the fake Bot API and the sandbox
served by this process, so its RSS comes from /proc/<pid> alone. Three phases, each on a fresh bot and database:

1. `help`: one person sends `--requests` paint requests at once, each a 40-megapixel painted mask (a few KB of
   PNG) for a 40-megapixel photo sent as a document; meanwhile another person sends /help again 0.1 s after each
   answer. The figure is that person's /help answer time (from the update entering the fake's queue to the reply
   reaching it, long polling included), beside the same person's answer time for 3 s before the attack.
2. `disk`: a person with no credits sends 28 paint requests with a 2048 x 1536 noise mask (3 MB of PNG, as the
   page could send it): every one is refused; the figure is how much the database files grew.
3. `memory`: one person's worst burst: 20 paint requests with 8 MB bodies and 40 downloads of a 19 MB photo, all
   at once; the figure is the bot's peak RSS while they run (sampled every 20 ms) and VmHWM afterwards.

    python -m bench.perf.hostile [--requests 30]

Run it with PYTHONPATH pointing at another checkout to measure that code (the bot subprocess inherits it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import os
import re
import statistics
import tempfile
import time
from pathlib import Path

import aiohttp
from PIL import Image

from bench.perf.latency import percentile
from bench.perf.world import bot_env, world
from tests.fakes.telegram import FakeTelegram, User, private_chat
from tests.fakes.webapp import signed_init_data
from tests.harness import free_port, running_process
from tests.integration.test_app_api import painted_bomb_png

ATTACKER = User(60_001, "Mallory", language_code="en")
OTHER = User(60_002, "Olivia", language_code="en")
PUBLIC_URL = "https://bot.example"


def _refs(token: str) -> object:
    from bot.http.app_refs import PhotoRefs  # the bot's own signing, so the references are the ones it issues

    return PhotoRefs(token)


def as_document(telegram: FakeTelegram, user: User, data: bytes) -> str:
    """A file sent as a document, as the reference the bot gives its owner."""
    file_id = telegram._state.store_document(data, "photo.png", "image/png")["file_id"]
    return _refs(telegram.token).photo(user.id, file_id)  # type: ignore[attr-defined]


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def noise_png(width: int, height: int, mode: str = "L") -> bytes:
    """Random pixels: a PNG that cannot be compressed (the worst body of its size)."""
    image = Image.frombytes(mode, (width, height), os.urandom(width * height * len(mode)))
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=0)
    return out.getvalue()


def status_mb(pid: int, key: str) -> float:
    with open(f"/proc/{pid}/status") as status:
        match = re.search(rf"^{key}:\s+(\d+) kB", status.read(), re.MULTILINE)
    return int(match.group(1)) / 1024 if match else 0.0


def database_bytes(workdir: Path) -> int:
    return sum(path.stat().st_size for path in workdir.glob("bot.db*"))


class Api:
    """The Mini App's API as one person's page calls it."""

    def __init__(self, session: aiohttp.ClientSession, port: int, token: str, user: User) -> None:
        self._session, self._root = session, f"http://127.0.0.1:{port}/app/api/"
        self._headers = {"Authorization": "tma " + signed_init_data(token, user)}

    async def post(self, path: str, body: dict[str, object]) -> int:
        try:
            async with self._session.post(self._root + path, json=body, headers=self._headers) as response:
                await response.read()
                return response.status
        except aiohttp.ClientError:
            return 0

    async def get(self, path: str) -> int:
        try:
            async with self._session.get(self._root + path, headers=self._headers) as response:
                await response.read()
                return response.status
        except aiohttp.ClientError:
            return 0


async def help_times(telegram: FakeTelegram, stop: asyncio.Event) -> list[float]:
    """/help from OTHER, 0.1 s after each answer, until `stop`; each answer time in seconds."""
    chat, times = private_chat(OTHER), []
    while not stop.is_set():
        sent = len(telegram.sent(chat.id))
        started = time.monotonic()
        telegram.user_sends(chat, OTHER, text="/help")
        try:
            await telegram.wait_for(lambda sent=sent: len(telegram.sent(chat.id)) > sent, 60)
        except AssertionError:  # not answered within a minute: counted as a minute
            pass
        times.append(time.monotonic() - started)
        await asyncio.sleep(0.1)
    return times


async def phase_help(workdir: Path, requests: int) -> dict[str, float]:
    async with world() as (telegram, sandbox):
        port = free_port()
        env = bot_env(telegram, sandbox, f"sqlite+aiosqlite:///{workdir}/bot.db", public_url=PUBLIC_URL,
                      http_port=port)
        bomb = painted_bomb_png(8000, 5000)
        photo, mask = as_document(telegram, ATTACKER, bomb), data_url(bomb)
        async with running_process(env, workdir, telegram), aiohttp.ClientSession() as session:
            telegram.user_sends(private_chat(OTHER), OTHER, text="/start")
            await asyncio.sleep(2)
            api, quiet = Api(session, port, telegram.token, ATTACKER), asyncio.Event()
            helping = asyncio.create_task(help_times(telegram, quiet))  # the same person, before any attack
            await asyncio.sleep(3)
            quiet.set()
            baseline = await helping
            stop = asyncio.Event()
            helping = asyncio.create_task(help_times(telegram, stop))
            await asyncio.sleep(0.5)
            started = time.monotonic()
            statuses = await asyncio.gather(*(api.post("jobs/replace", {"photo": photo, "mask": mask,
                                                                        "prompt": "a cat"}) for _ in range(requests)))
            attack_s = time.monotonic() - started
            await asyncio.sleep(2)
            stop.set()
            times = await helping
    return {"hostile_paint_requests": requests, "hostile_attack_s": round(attack_s, 2),
            "hostile_statuses": {str(code): statuses.count(code) for code in sorted(set(statuses))},  # type: ignore[dict-item]
            "help_quiet_p50_s": round(statistics.median(baseline), 3), "help_quiet_max_s": round(max(baseline), 3),
            "help_p50_s": round(statistics.median(times), 3), "help_p95_s": round(percentile(times, 0.95), 3),
            "help_max_s": round(max(times), 3), "help_count": len(times)}


async def phase_disk(workdir: Path) -> dict[str, float]:
    async with world() as (telegram, sandbox):
        port = free_port()
        env = bot_env(telegram, sandbox, f"sqlite+aiosqlite:///{workdir}/bot.db", public_url=PUBLIC_URL,
                      http_port=port, free_credits_per_day=0, credit_packs="10:50")
        photo = as_document(telegram, ATTACKER, noise_png(2048, 1536, "RGB"))
        mask = data_url(noise_png(2048, 1536))
        async with running_process(env, workdir, telegram), aiohttp.ClientSession() as session:
            api = Api(session, port, telegram.token, ATTACKER)
            await api.get("me")
            await asyncio.sleep(1)
            before = database_bytes(workdir)
            statuses = [await api.post("jobs/replace", {"photo": photo, "mask": mask, "prompt": "a cat"})
                        for _ in range(28)]
            await asyncio.sleep(1)
            grown = database_bytes(workdir) - before
    return {"refused_statuses": {str(code): statuses.count(code) for code in sorted(set(statuses))},  # type: ignore[dict-item]
            "refused_db_growth_mb": round(grown / 2**20, 2), "mask_body_mb": round(len(mask) / 2**20, 2)}


async def phase_memory(workdir: Path) -> dict[str, float]:
    async with world() as (telegram, sandbox):
        port = free_port()
        env = bot_env(telegram, sandbox, f"sqlite+aiosqlite:///{workdir}/bot.db", public_url=PUBLIC_URL,
                      http_port=port)
        big = noise_png(2500, 2500, "RGB")  # 18.8 MB: under Telegram's 20 MB for bots
        photo = as_document(telegram, ATTACKER, big)
        mask_photo = as_document(telegram, ATTACKER, noise_png(2048, 1536, "RGB"))
        heavy_mask = data_url(noise_png(2048, 1536, "RGBA")[: 6 * 2**20])  # an 8 MB body
        async with running_process(env, workdir, telegram) as bot, aiohttp.ClientSession() as session:
            api = Api(session, port, telegram.token, ATTACKER)
            await api.get("me")
            await asyncio.sleep(1)
            pid, samples, done = bot.pid, [], asyncio.Event()
            idle_mb = status_mb(pid, "VmRSS")

            async def sample() -> None:
                while not done.is_set():
                    samples.append(status_mb(pid, "VmRSS"))
                    await asyncio.sleep(0.02)

            sampling = asyncio.create_task(sample())
            statuses = await asyncio.gather(
                *(api.post("jobs/replace", {"photo": mask_photo, "mask": heavy_mask, "prompt": "a cat"})
                  for _ in range(20)),
                *(api.get(f"photo?ref={photo}") for _ in range(40)))
            await asyncio.sleep(1)
            done.set()
            await sampling
            hwm = status_mb(pid, "VmHWM")
    return {"burst_statuses": {str(code): statuses.count(code) for code in sorted(set(statuses))},  # type: ignore[dict-item]
            "burst_idle_rss_mb": round(idle_mb, 1), "burst_peak_rss_mb": round(max(samples), 1),
            "burst_vmhwm_mb": round(hwm, 1), "photo_mb": round(len(big) / 2**20, 1)}


async def run_hostile(workdir: Path, *, requests: int = 30, phases: tuple[str, ...] = ("help", "disk", "memory")
                      ) -> dict[str, object]:
    """Every phase's figures, each phase on its own bot and database."""
    figures: dict[str, object] = {}
    runs = {"help": lambda path: phase_help(path, requests), "disk": phase_disk, "memory": phase_memory}
    for name in phases:
        path = workdir / name
        path.mkdir(parents=True, exist_ok=True)
        figures.update(await runs[name](path))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--only", default="help,disk,memory")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        print(json.dumps(asyncio.run(run_hostile(Path(workdir), requests=options.requests,
                                                 phases=tuple(options.only.split(","))))))


if __name__ == "__main__":
    main()
