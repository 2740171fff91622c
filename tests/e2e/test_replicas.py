"""Replicas on one PostgreSQL: one polls at a time, another takes over when it is killed, conversations
cross replicas, and migrations started together take turns."""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from alembic.script import ScriptDirectory
from sqlalchemy import text

from bot.store import create_engine
from bot.store.db import alembic_config
from bot.store.records import FINAL_STATES
from tests.conftest import _empty_postgres_database
from tests.e2e.conftest import ALICE
from tests.e2e.helpers import wait_media
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import User, private_chat
from tests.harness import (
    WEBHOOK_PATH,
    BotProcess,
    bot_settings,
    fakes,
    free_port,
    get_updates_calls,
    process_env,
    wait_until,
)
from tests.harness.chaos import Answers, ChaosConfig, Traffic, UserRequest, calls_answered

pytestmark = pytest.mark.postgres

#: the longest a fetching replica's death may leave updates unfetched
TAKEOVER_S = 5.0
#: the traffic sends several requests per user at once: a user's limit of jobs in progress would refuse some
#: (a refusal is an answer, but not the result these tests count), as in the chaos experiment
TRAFFIC_LIMITS = {"user_max_active_jobs": 100000}


@pytest.fixture
async def pg_url(postgres_database: str) -> str:
    """An empty PostgreSQL database of this test's own."""
    await _empty_postgres_database(postgres_database)
    return postgres_database


def replicas(telegram: FakeTelegram, sandbox, url: str, workdir: Path, count: int) -> list[BotProcess]:
    """`count` bot processes on one database, each with its own worker id (its job leases) and directory."""
    return [BotProcess(bot_settings(telegram, sandbox, url, worker_id=f"replica-{number}", **TRAFFIC_LIMITS),
                       workdir / f"r{number}", telegram) for number in range(count)]


async def start_all(bots: list[BotProcess]) -> None:
    """The first polls; the others wait for its lock."""
    await bots[0].start()
    await asyncio.gather(*(bot.start_replica() for bot in bots[1:]))


async def job_states(url: str) -> tuple[dict[str, int], int]:
    """Job counts by state, and how many requests were stored as more than one job."""
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            states = dict((await connection.execute(text("SELECT state, count(*) FROM jobs GROUP BY state"))).all())
            twice = (await connection.execute(text(
                "SELECT count(*) FROM (SELECT 1 FROM jobs GROUP BY chat_id, reply_to_message_id "
                "HAVING count(*) > 1) AS t"))).scalar_one()
    finally:
        await engine.dispose()
    return states, int(twice)


async def exposed_at_kill(telegram: FakeTelegram, requests: list[UserRequest], url: str) -> set[UserRequest]:
    """Right after a SIGKILL: the requests Telegram saw answered whose job no replica had recorded final, the only
    ones a restarted or another replica may answer again."""
    await calls_answered(telegram)  # a send the dead replica had under way still counts as answered
    requests = list(requests)  # the traffic goes on adding to its list while this waits on the database
    answers = Answers.collect(telegram, requests)
    engine = create_engine(url)
    try:
        async with engine.connect() as connection:
            rows = (await connection.execute(text("SELECT chat_id, reply_to_message_id, state FROM jobs"))).all()
    finally:
        await engine.dispose()
    final = {state.value for state in FINAL_STATES}
    recorded = {(chat_id, message_id) for chat_id, message_id, state in rows if state in final}
    return {request for request in requests
            if answers.answered(request) and (request.chat_id, request.message_id) not in recorded}


async def kill_the_fetcher(telegram: FakeTelegram, bots: list[BotProcess], requests: list[UserRequest], url: str,
                           exposed: Counter[UserRequest]) -> tuple[BotProcess, float]:
    """SIGKILL the replica that fetches updates (adding what the kill exposed); how long until another one fetched."""
    await wait_until(lambda: sum(bot.fetches_updates() for bot in bots) == 1, 20, "one replica to fetch updates")
    [leader] = [bot for bot in bots if bot.fetches_updates()]
    await leader.kill()
    killed_at, polls = time.monotonic(), get_updates_calls(telegram)
    await wait_until(lambda: get_updates_calls(telegram) > polls, 20, "another replica to fetch updates")
    took = time.monotonic() - killed_at
    # its leased jobs wait for their lease to run out, so what it left unrecorded is still so now
    exposed.update(await exposed_at_kill(telegram, requests, url))
    return leader, took


async def outcome_of(telegram: FakeTelegram, requests: list, pg_url: str) -> tuple[Answers, dict[str, int], int]:
    """Once every request is answered and every job settled: the answers, job counts by state, and how
    many requests were stored as more than one job."""

    def all_answered() -> bool:
        answers = Answers.collect(telegram, requests)
        return all(answers.answered(request) for request in requests)

    await wait_until(all_answered, 90, "every request to be answered")
    states: dict[str, int] = {}
    for _ in range(60):  # a job whose result went out is recorded delivered a moment later
        states, _ = await job_states(pg_url)
        if all(state in {s.value for s in FINAL_STATES} for state in states):
            break
        await asyncio.sleep(0.5)
    _, twice = await job_states(pg_url)
    return Answers.collect(telegram, requests), states, twice


def assert_nothing_lost(requests: list, answers: Answers, states: dict[str, int], twice: int,
                        exposed: Counter[UserRequest]) -> None:
    """0 lost, 0 stuck, no request stored twice, a result sent again only once per kill that exposed it."""
    lost = [request for request in requests if not answers.answered(request)]
    stuck = sum(count for state, count in states.items() if state not in {s.value for s in FINAL_STATES})
    duplicated = [request for request in requests if answers.results[request] > 1]
    assert lost == []
    assert stuck == 0, states
    assert twice == 0
    assert sum(states.values()) == len(requests)
    # a result sent again only when its replica died between Telegram's answer and the commit after it (several
    # deliveries run at once, so one kill may expose several)
    assert all(answers.results[request] - 1 <= exposed[request] for request in duplicated), (duplicated, exposed)
    assert all(answers.results[request] + answers.failures[request] >= 1 for request in requests)


@pytest.mark.timeout(240)
async def test_three_replicas_lose_nothing_when_the_fetching_one_is_killed_again_and_again(tmp_path: Path,
                                                                                          pg_url: str):
    kills = 3
    async with fakes(task_seconds=0.5) as world:
        bots = replicas(world.telegram, world.sandbox, pg_url, tmp_path, 3)
        try:
            await start_all(bots)
            traffic = Traffic(world.telegram, ChaosConfig(jobs=60, chats=16, send_seconds=16), random.Random(12))
            sending = asyncio.create_task(traffic.send_all())
            takeovers, exposed = [], Counter()
            for _ in range(kills):
                await asyncio.sleep(3.0)
                killed, took = await kill_the_fetcher(world.telegram, bots, traffic.requests, pg_url, exposed)
                takeovers.append(took)
                await killed.start_replica()  # back as a replica that waits for the lock
            await sending
            answers, states, twice = await outcome_of(world.telegram, traffic.requests, pg_url)
        finally:
            await asyncio.gather(*(bot.close() for bot in bots))
    assert all(took < TAKEOVER_S for took in takeovers), takeovers
    assert_nothing_lost(traffic.requests, answers, states, twice, exposed)


class RoundRobin:
    """A small load balancer on loopback: each webhook POST goes to the next replica that answers."""

    def __init__(self, backends: list[str]) -> None:
        self.backends = backends
        self._next = 0
        self._runner: web.AppRunner | None = None
        self.url = ""
        self.served: dict[str, int] = dict.fromkeys(backends, 0)

    async def start(self, port: int) -> None:
        app = web.Application()
        app.router.add_post("/{path:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", port).start()
        self.url = f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _forward(self, request: web.Request) -> web.Response:
        body = await request.read()
        headers = {name: value for name, value in request.headers.items()
                   if name.lower() in ("content-type", "x-telegram-bot-api-secret-token")}
        async with aiohttp.ClientSession() as session:
            for _ in range(len(self.backends)):
                backend = self.backends[self._next % len(self.backends)]
                self._next += 1
                try:
                    async with session.post(backend + request.path_qs, data=body, headers=headers,
                                            timeout=aiohttp.ClientTimeout(total=10)) as answer:
                        self.served[backend] += 1
                        return web.Response(status=answer.status, body=await answer.read())
                except (aiohttp.ClientError, TimeoutError):
                    continue  # that replica is down: the next one takes the update
        return web.Response(status=502)


@pytest.mark.timeout(240)
async def test_three_webhook_replicas_behind_a_balancer_lose_nothing_when_one_is_killed(tmp_path: Path,
                                                                                       pg_url: str):
    kills, exposed = 3, Counter()
    async with fakes(task_seconds=0.5) as world:
        ports = [free_port() for _ in range(3)]
        balancer = RoundRobin([f"http://127.0.0.1:{port}" for port in ports])
        await balancer.start(free_port())
        bots = []
        for number, port in enumerate(ports):
            values = bot_settings(world.telegram, world.sandbox, pg_url, webhook=True, http_port=port,
                                  worker_id=f"webhook-{number}", **TRAFFIC_LIMITS)
            values["TELEGRAM_WEBHOOK_URL"] = balancer.url + WEBHOOK_PATH  # every replica names the balancer
            bots.append(BotProcess(values, tmp_path / f"w{number}", world.telegram))
        try:
            for bot in bots:
                await bot.start()
            traffic = Traffic(world.telegram, ChaosConfig(jobs=60, chats=16, send_seconds=16), random.Random(7))
            sending = asyncio.create_task(traffic.send_all())
            for round_ in range(kills):
                await asyncio.sleep(3.0)
                victim = bots[round_ % len(bots)]
                await victim.kill()  # SIGKILL: updates in its inbox lease, jobs anywhere in their life
                exposed.update(await exposed_at_kill(world.telegram, traffic.requests, pg_url))
                await asyncio.sleep(1.0)
                await victim.start()
            await sending
            answers, states, twice = await outcome_of(world.telegram, traffic.requests, pg_url)
        finally:
            await asyncio.gather(*(bot.close() for bot in bots))
            await balancer.stop()
    assert all(count > 0 for count in balancer.served.values()), balancer.served  # the work was spread
    assert world.telegram.pending_updates == 0
    assert_nothing_lost(traffic.requests, answers, states, twice, exposed)


@pytest.mark.timeout(120)
async def test_a_face_swap_whose_photos_reach_different_replicas_completes(tmp_path: Path, pg_url: str):
    async with fakes(task_seconds=0.2) as world:
        telegram = world.telegram
        bots = replicas(telegram, world.sandbox, pg_url, tmp_path, 2)
        try:
            await start_all(bots)
            chat = private_chat(ALICE)
            first = bots[0]
            assert first.fetches_updates()
            telegram.user_sends(chat, ALICE, photo=samples.jpeg(200, 200), caption="/faceswap")
            await telegram.wait_for(lambda: any("Now send the" in (m.text or "") for m in telegram.sent(chat.id)), 20)
            await first.kill()  # the face is in the database, not in the replica that took it
            await wait_until(lambda: bots[1].fetches_updates(), 20, "the other replica to fetch updates", bots[1])
            telegram.user_sends(chat, ALICE, photo=samples.jpeg(220, 180, color=(40, 90, 160)))
            [result] = await wait_media(telegram, chat.id)
        finally:
            await asyncio.gather(*(bot.close() for bot in bots))
    assert result.media_kind is not None


@pytest.mark.timeout(180)
@pytest.mark.xdist_group("timing")  # two replicas share the bot's budget on the real clock
async def test_a_replica_stopping_mid_backlog_draws_no_429_while_the_other_takes_its_share(tmp_path: Path,
                                                                                          pg_url: str):
    # Telegram's flood limits on: the backlog goes out at 30 a second, 15 from each replica. One stops while
    # its deliveries still go out: the other takes the whole budget only once those can no longer count.
    ready_at = time.monotonic() + 120.0

    def until_ready(operation: str, task_id: str) -> float:
        return max(0.0, ready_at - time.monotonic())

    async with fakes(rate_limits=True, task_duration=until_ready) as world:
        telegram = world.telegram
        bots = replicas(telegram, world.sandbox, pg_url, tmp_path, 2)
        try:
            await start_all(bots)
            users = [User(8100 + number, f"Backlog{number}") for number in range(30)]
            photo = samples.jpeg(64, 48)
            ready_at = time.monotonic() + 6.0  # every task ends at once, after the requests are in
            for _ in range(4):
                for user in users:
                    telegram.user_sends(private_chat(user), user, photo=photo, caption="/upscale 2")
            jobs = 4 * len(users)

            def results() -> int:
                return sum(1 for call in telegram.calls if call.method == "sendPhoto" and call.ok)

            await wait_until(lambda: results() >= 20, 60, "the backlog to start going out", bots[0])
            await bots[1].terminate()
            await wait_until(lambda: results() >= jobs, 90, f"{jobs} results", bots[0])
        finally:
            await asyncio.gather(*(bot.close() for bot in bots))
    assert telegram.stats["429"] == 0, "\n".join(str(hit) for hit in telegram.limit_hits)


@pytest.mark.timeout(120)
async def test_three_processes_migrating_a_fresh_database_at_once_take_turns(tmp_path: Path, pg_url: str):
    env = process_env({"DATABASE_URL": pg_url})
    processes = [await asyncio.create_subprocess_exec(sys.executable, "-m", "bot", "migrate", cwd=tmp_path, env=env,
                                                      stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
                 for _ in range(3)]
    outputs = await asyncio.gather(*(process.communicate() for process in processes))
    assert [process.returncode for process in processes] == [0, 0, 0], [out for out, _ in outputs]
    engine = create_engine(pg_url)
    try:
        async with engine.connect() as connection:
            revision = (await connection.execute(text("SELECT version_num FROM alembic_version"))).scalar_one()
            tables = set((await connection.execute(text(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"))).scalars())
    finally:
        await engine.dispose()
    assert revision == ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert {"jobs", "conversations", "replicas", "chat_sends"} <= tables
