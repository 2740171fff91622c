"""The handlers' dependencies for a test: every service real, over the test's own database."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx

from bot.aiart import AiartClient
from bot.chats.conversations import Conversations
from bot.chats.languages import LanguageChoices
from bot.chats.people import PeopleService
from bot.clock import utcnow
from bot.credits import CreditPolicy, CreditService
from bot.jobs.service import JobService
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.store.db import Sessions
from bot.tg.context import Access, Deps


def _no_service(request: httpx.Request) -> httpx.Response:
    return httpx.Response(503, json={"code": "503", "msg": "no image service in this test"})


def make_deps(sessions: Sessions, *, policy: CreditPolicy | None = None, **given: Any) -> Deps:
    """Deps as the bot builds them (no Mini App, no service to call), with the fields `given` in their place;
    `policy` sets the credit terms of both the job service and the credit service."""
    styles = given.get("styles") or load_catalogue()
    operations = given.get("operations") or build_catalogue(styles)
    policy = policy or CreditPolicy(operations)
    client = AiartClient(httpx.AsyncClient(transport=httpx.MockTransport(_no_service)),
                         base_url="http://service.invalid", api_key="test")
    made: dict[str, Any] = {
        "jobs": JobService(sessions, deadline=timedelta(minutes=20), credits=policy), "operations": operations,
        "styles": styles, "client": client, "access": Access(), "people": PeopleService(sessions),
        "credits": CreditService(sessions, policy), "languages": LanguageChoices(sessions),
        "conversations": Conversations(sessions), "app_links": None, "clock": utcnow}
    return Deps(**{**made, **given})
