"""The sandbox's memory stays bounded on a long run: request bodies, finished tasks and their files."""

from __future__ import annotations

import httpx

import bot.sandbox.state as state_module
from bot.sandbox import Sandbox, SandboxConfig
from bot.sandbox.state import HeaderDict, ReceivedRequest, SandboxState, SandboxTask


def request(index: int, size: int) -> ReceivedRequest:
    return ReceivedRequest("POST", f"/v1/aiart/imgupscale/{index}", "", HeaderDict([("X-N", str(index))]),
                           bytes([index % 256]) * size)


def test_only_the_most_recent_bodies_are_kept(monkeypatch):
    monkeypatch.setattr(state_module, "RECEIVED_BODY_BYTES", 10_000)
    state = SandboxState(credits_total=10, credits_remaining=10)
    for index in range(100):
        state.remember(request(index, 1_000))
    assert len(state.received) == 100  # every request is still listed ...
    kept = [r for r in state.received if r.body]
    assert sum(len(r.body) for r in kept) == state.body_bytes <= 10_000  # ... with the newest bodies only
    assert [r.path for r in kept] == [f"/v1/aiart/imgupscale/{i}" for i in range(90, 100)]
    assert all(r.body_dropped and r.headers["x-n"] for r in state.received[:90])


def test_the_newest_body_is_kept_whatever_its_size(monkeypatch):
    monkeypatch.setattr(state_module, "RECEIVED_BODY_BYTES", 100)
    state = SandboxState(credits_total=10, credits_remaining=10)
    state.remember(request(1, 50))
    state.remember(request(2, 5_000))
    assert state.received[-1].body == bytes([2]) * 5_000 and state.received[0].body == b""


def test_trimming_old_requests_keeps_the_body_count_right(monkeypatch):
    monkeypatch.setattr(state_module, "RECEIVED_LIMIT", 50)
    monkeypatch.setattr(state_module, "RECEIVED_BODY_BYTES", 20_000)
    state = SandboxState(credits_total=10, credits_remaining=10)
    for index in range(1_000):
        state.remember(request(index, 700))
        assert state.body_bytes == sum(len(r.body) for r in state.received) <= 20_000
    assert len(state.received) <= 50 and state.received[-1].path.endswith("/999")


def finished(state: SandboxState, task_id: str, completed_at: float | None, files: list[str] = ()) -> None:
    task = SandboxTask(task_id=task_id, operation="imgupscale", created_at=0.0, due_at=0.0,
                       completed_at=completed_at, status=0 if completed_at is None else 1)
    for name in files:
        state.results.put(name, b"x" * 100, "image/png")
    task.result_files = list(files)
    state.tasks[task_id] = task


def test_finished_tasks_are_forgotten_after_the_retention_with_their_files():
    state = SandboxState(credits_total=10, credits_remaining=10)
    finished(state, "old", 100.0, ["old.png"])
    finished(state, "recent", 3_000.0, ["recent.png"])
    finished(state, "running", None)
    assert state.forget_finished(now=3_800.0, retention_s=3_600.0) == 1
    assert list(state.tasks) == ["recent", "running"]
    assert "old.png" not in state.results and "recent.png" in state.results


def test_past_the_limit_the_oldest_finished_tasks_go_first_and_running_ones_stay():
    state = SandboxState(credits_total=10, credits_remaining=10)
    for index in range(10):
        finished(state, f"done-{index}", float(index))
        finished(state, f"running-{index}", None)
    assert state.forget_finished(now=20.0, retention_s=3_600.0, limit=3) == 7
    assert sorted(state.tasks) == sorted([f"done-{i}" for i in (7, 8, 9)] + [f"running-{i}" for i in range(10)])


async def test_a_long_running_sandbox_prunes_its_task_list(monkeypatch):
    """Through the task runner: every PRUNE_EVERY new tasks, finished ones past their retention go."""
    monkeypatch.setattr(state_module, "TASK_RETENTION_S", 0.0)
    monkeypatch.setattr(state_module, "PRUNE_EVERY", 5)
    monkeypatch.setattr("bot.sandbox.lifecycle.PRUNE_EVERY", 5)
    async with Sandbox(SandboxConfig(api_key="k" * 16, task_seconds=0.0)) as sandbox:
        async with httpx.AsyncClient(base_url=sandbox.base_url, headers={"Authorization": "Bearer " + "k" * 16}) as http:
            for index in range(12):
                answer = await http.post("/v1/aiart/text2img", json={"content": f"a cat {index}", "width": 64,
                                                                       "height": 64, "templateId": "x"})
                task_id = answer.json()["data"]["taskId"]
                for _ in range(100):
                    if (await http.get(f"/v1/aiart/tasks/{task_id}")).json()["data"]["status"] != 0:
                        break
        assert len(sandbox.tasks) < 12
