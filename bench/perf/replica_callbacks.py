"""Service callbacks with three replicas: status checks per task once callbacks arrive, after a phase that lost some.

The service calls one replica back (as one address would); the others learn of a callback only as
a check it made due. A first phase loses a tenth of the callbacks, so every replica's schedule sees
some tasks end without one; the second phase loses none, and its checks per task are the figure.
Requests, durations and time scale are the polling section's (bench/perf/polling.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from pathlib import Path

from bench.perf.latency import percentile
from bench.perf.polling import CALLBACK_PATH, LOSSY_SHARE, SizedReplay, draw_requests, make_photos
from bench.perf.world import RESULT_METHODS, NoticeLog, OkCounter, bot_env, running_replicas, wait_until, world
from bot.sandbox.callbacks import CallbackFaults
from tests.fakes.telegram import User, private_chat
from tests.harness import free_port


@dataclass(frozen=True)
class ReplicaCallbacks:
    """The lossy phase's lost callbacks, and the second phase's figures (unscaled seconds)."""

    lost: int
    first_tasks: int
    tasks: int
    polls_per_task: float
    lag_p95_s: float


async def run_replica_callbacks(workdir: Path, database_url: str, *, replicas: int = 3, lossy_tasks: int = 40,
                                tasks: int = 100, scale: float = 0.1, arrivals_per_s: float = 3.0,
                                seed: int = 5) -> ReplicaCallbacks:
    """Both phases against `replicas` bot processes on one PostgreSQL database."""
    requests = draw_requests(lossy_tasks + tasks, seed)
    replay = SizedReplay(requests, scale)
    photos = make_photos(requests)
    rng = random.Random(seed)
    users = [User(7000 + index, f"Replica{index}") for index in range(60)]
    async with world(task_duration_by_size=replay) as (telegram, sandbox):
        port = free_port()
        env = bot_env(telegram, sandbox, database_url, telegram_rate_limit="false", poll_policy="adaptive",
                      poll_time_scale=scale, aiart_webhook_path=CALLBACK_PATH)
        async with running_replicas(env, workdir, telegram, replicas, first={"HTTP_PORT": str(port)}) as bots:
            first_call = len(telegram.calls)
            results = OkCounter(telegram, RESULT_METHODS, first_call)
            url = f"http://127.0.0.1:{port}{CALLBACK_PATH}"
            phases = ((requests[:lossy_tasks], LOSSY_SHARE, "?phase=lossy"), (requests[lossy_tasks:], 0.0, ""))
            sent, before, lost_count = 0, set(), 0
            for phase, lost, query in phases:
                # a new URL makes the sandbox start a new sender with these faults
                sandbox.config.webhook_url = url + query
                sandbox.config.webhook_faults = CallbackFaults(lost=lost, seed=seed)
                before = set(sandbox.tasks)
                next_at = time.monotonic()
                for request in phase:
                    next_at += rng.expovariate(arrivals_per_s)
                    await asyncio.sleep(max(0.0, next_at - time.monotonic()))
                    user = users[sent % len(users)]
                    telegram.user_sends(private_chat(user), user, photo=photos[request.width, request.height],
                                        caption=request.caption)
                    sent += 1
                await wait_until(lambda expected=sent: results() >= expected,
                                 max(r.duration for r in phase) * scale * 3 + 60.0, f"{sent} results", bots[0])
                if lost and sandbox.callbacks is not None:
                    lost_count = sum(1 for _, outcome in sandbox.callbacks.log if outcome == "lost")
    tasks_log = sandbox.state.tasks
    assert isinstance(tasks_log, NoticeLog)
    second = {task_id: task for task_id, task in tasks_log.items() if task_id not in before}
    lags = [(tasks_log.noticed[task_id] - task.completed_at) / scale for task_id, task in second.items()
            if task_id in tasks_log.noticed and task.completed_at is not None]
    return ReplicaCallbacks(lost=lost_count, first_tasks=lossy_tasks, tasks=len(second),
                            polls_per_task=sum(task.polls for task in second.values()) / max(1, len(second)),
                            lag_p95_s=percentile(lags, 0.95))
