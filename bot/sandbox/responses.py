"""JSON envelopes the service answers with, and the task resource as the task query shows it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aiohttp import web

from bot.sandbox.state import BUSINESS_ID, SandboxTask


def envelope(data: Any, *, code: str = "000", msg: str = "success", status: int = 200,
             headers: Mapping[str, str] | None = None) -> web.Response:
    """A response carrying {"code", "msg", "data"}."""
    return web.json_response({"code": code, "msg": msg, "data": data}, status=status, headers=headers)


def error_response(status: int, code: str, msg: str, *, headers: Mapping[str, str] | None = None) -> web.Response:
    """An error envelope with data null."""
    return envelope(None, code=code, msg=msg, status=status, headers=headers)


def task_data(task: SandboxTask) -> dict[str, Any]:
    """The data of GET /v1/aiart/tasks/{taskId}; result fields are empty until status 1."""
    done = task.status == 1
    data: dict[str, Any] = {
        "taskId": task.task_id,
        "createTime": task.created_ms,
        "updateTime": task.updated_ms,
        "status": task.status,
        "businessId": BUSINESS_ID,
        "type": task.type,
        "resultUrl": task.result_urls[0] if done and not task.is_headshot and task.result_urls else "",
        "hasHsfw": task.nsfw,
    }
    if task.credits_increment is not None:
        # undocumented, read by the provider's own client: what the task cost in tokens
        data["creditsIncrement"] = task.credits_increment
    if task.is_headshot:
        groups = task.outcome.avatar_groups if done and task.outcome is not None else ()
        data["avatarResult"] = [
            {"templateId": group.template_id,
             "images": [{"id": name.rsplit(".", 1)[0], "url": avatar_url(name), "hasHsfw": False}
                        for name in group.files]}
            for group in groups
        ]
    if task.status == 2:
        data["msg"] = task.reason or "task failed"
    return data


def avatar_url(name: str) -> str:
    """The s3 address a headshot file is reported under, as the live service does."""
    return f"s3://img-pub-fotor/sandbox/{name}"
