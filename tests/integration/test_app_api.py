"""The Mini App's API through aiohttp's test client, wired as the bot wires it (bot.runtime.mini_app): a real SQLite
store, the job service with credits and limits, and photos downloaded from the fake Bot API on loopback."""

from __future__ import annotations

import base64
import io
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from PIL import Image, ImageDraw
from sqlalchemy import select

from bot.credits import CreditPolicy, CreditService
from bot.http.app_api import MAX_MASK_BODY, MiniApp
from bot.http.app_limits import RequestBudget
from bot.http.app_refs import PhotoRefs
from bot.http.app_routes import add_app_routes, content_security_policy, preview_origins
from bot.jobs.conversations import Conversations
from bot.jobs.languages import LanguageChoices
from bot.jobs.people import PeopleService
from bot.jobs.service import JobService, Quotas
from bot.jobs.stored_inputs import StoredInputs
from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue, parse_catalogue
from bot.runtime import mini_app
from bot.store import JobRecord, JobRepository, JobState, NewJob, create_engine, session_factory
from bot.store.models import jobs_table
from bot.tg.app import build_application, notifier_for
from bot.tg.context import Access, Deps
from bot.tg.miniapp import AppLinks
from tests.conftest import migrated_sqlite
from tests.fakes.samples import jpeg, png
from tests.fakes.telegram import FakeTelegram
from tests.fakes.telegram_models import User
from tests.fakes.webapp import signed_init_data

ALICE, BOB, STRANGER = 1001, 1002, 1003


def init_data(token: str, user_id: int, *, language: str = "en", age: float = 0.0) -> str:
    """initData as Telegram signs it for `user_id`, `age` seconds old."""
    return signed_init_data(token, User(user_id, "Person", language_code=language),
                            auth_date=int(time.time() - age), query_id="AAHdF6IQAAAAAN0XohDhrOrc")


@dataclass
class World:
    client: TestClient
    telegram: FakeTelegram
    refs: PhotoRefs
    stored: StoredInputs
    database_url: str
    app: MiniApp

    def auth(self, user_id: int = ALICE, **options: Any) -> dict[str, str]:
        return {"Authorization": "tma " + init_data(self.telegram.token, user_id, **options)}

    async def get(self, path: str, user_id: int = ALICE, **options: Any) -> tuple[int, Any]:
        response = await self.client.get("/app/api/" + path, headers=self.auth(user_id, **options))
        body = await response.json() if response.content_type == "application/json" else await response.read()
        return response.status, body

    async def post(self, path: str, body: dict[str, Any], user_id: int = ALICE) -> tuple[int, Any]:
        response = await self.client.post("/app/api/" + path, json=body, headers=self.auth(user_id))
        return response.status, await response.json()

    def photo(self, data: bytes, user_id: int = ALICE) -> str:
        """A photo in Telegram's keeping, as the reference the bot gives `user_id` for it."""
        return self.refs.photo(user_id, self.telegram.add_file(data))

    async def jobs(self) -> list[JobRecord]:
        engine = create_engine(self.database_url)
        try:
            async with session_factory(engine)() as session:
                ids = (await session.execute(select(jobs_table.c.id).order_by(jobs_table.c.id))).scalars()
                return [job for job_id in ids if (job := await JobRepository(session).get(job_id)) is not None]
        finally:
            await engine.dispose()


@pytest.fixture
async def world(tmp_path: Path, sqlite_template: Path) -> AsyncIterator[World]:
    database_url = migrated_sqlite(sqlite_template, tmp_path / "bot.db")
    engine = create_engine(database_url)
    sessions = session_factory(engine)
    styles = load_catalogue()
    catalogue = build_catalogue(styles)
    policy = CreditPolicy(catalogue, free_per_day=5)
    try:
        async with FakeTelegram() as telegram:
            token = telegram.token
            deps = Deps(jobs=JobService(sessions, deadline=timedelta(minutes=20), quotas=Quotas(2, 0), credits=policy),
                        operations=catalogue, styles=styles, client=None,  # type: ignore[arg-type]
                        access=Access(allowed_users=frozenset({ALICE, BOB})), people=PeopleService(sessions),
                        credits=CreditService(sessions, policy), languages=LanguageChoices(sessions),
                        conversations=Conversations(sessions),
                        app_links=AppLinks("https://bot.example/app/", PhotoRefs(token)))
            application = build_application(token, telegram.url, deps, rate_limit=False)
            stored = StoredInputs(deps.conversations)  # type: ignore[arg-type]
            notifier = notifier_for(application, stored=stored)
            app = mini_app(token, deps, application, notifier, stored)
            assert app is not None
            web_app = web.Application(client_max_size=MAX_MASK_BODY)
            add_app_routes(web_app, app)
            async with application.bot, TestClient(TestServer(web_app)) as client:
                yield World(client, telegram, deps.app_links.refs, stored, database_url,  # type: ignore[union-attr]
                            app)
    finally:
        await engine.dispose()


def mask_png(size: tuple[int, int], box: tuple[int, int, int, int] | None = (10, 10, 30, 30)) -> str:
    mask = Image.new("L", size, 0)
    if box is not None:
        ImageDraw.Draw(mask).rectangle(box, fill=255)
    out = io.BytesIO()
    mask.save(out, "PNG")
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode()


# --- who may call ---------------------------------------------------------------------------------------------

async def test_valid_init_data_gets_the_person_texts_in_their_language(world: World) -> None:
    status, me = await world.get("me", language="ar")
    assert status == 200
    assert me["language"] == "ar" and me["rtl"] is True
    assert me["texts"]["paint_go"] and me["texts"]["paint_go"] != "Replace"
    assert me["credits"]  # five free credits today, in words
    status, me = await world.get("me", language="ru")
    assert (status, me["rtl"], me["texts"]["undo"]) == (200, False, "Отменить")


@pytest.mark.parametrize("case", ["none", "forged", "expired", "other scheme", "another bot"])
async def test_anything_but_fresh_telegram_signed_init_data_is_401(world: World, case: str) -> None:
    good = init_data(world.telegram.token, ALICE)
    header = {
        "none": None,
        "forged": "tma " + good.replace("Person", "Mallory"),  # another name under the same hash
        "expired": "tma " + init_data(world.telegram.token, ALICE, age=25 * 3600),
        "other scheme": "Bearer " + good,
        "another bot": "tma " + init_data("999:another-bots-token", ALICE),
    }[case]
    response = await world.client.get("/app/api/me", headers={"Authorization": header} if header else {})
    assert response.status == 401
    assert (await response.json())["error"] == "unauthorized"


def test_the_bot_token_stays_out_of_the_mini_apps_repr(world: World) -> None:
    assert world.telegram.token not in repr(world.app)


async def test_the_allowlist_applies(world: World) -> None:
    status, body = await world.get("me", STRANGER)
    assert (status, body["error"]) == (403, "not_allowed")


async def test_a_person_is_slowed_down_past_their_budget(world: World) -> None:
    world.app.budget = RequestBudget(burst=3, rate=0.001)
    statuses = [(await world.get("me"))[0] for _ in range(4)]
    assert statuses == [200, 200, 200, 429]
    assert (await world.get("me", BOB))[0] == 200  # a budget is each person's own


# --- whose pictures -------------------------------------------------------------------------------------------

async def test_a_photo_comes_through_the_api_for_its_owner_only(world: World) -> None:
    data = jpeg(320, 240)
    ref = world.photo(data)
    status, body = await world.get("photo?ref=" + ref)
    assert status == 200 and body == data
    status, body = await world.get("photo?ref=" + ref, BOB)
    assert (status, body["error"]) == (403, "not_yours")
    forged = ref[:-2] + ("AA" if not ref.endswith("AA") else "BB")
    assert (await world.get("photo?ref=" + forged))[0] == 403


async def test_another_persons_result_is_refused(world: World) -> None:
    ref = world.photo(jpeg(320, 240))
    status, _ = await world.post("jobs/run", {"operation": "upscale", "argument": "2", "photo": ref})
    assert status == 200
    [job] = await world.jobs()
    engine = create_engine(world.database_url)
    try:  # delivered, as the worker records it
        async with session_factory(engine)() as session, session.begin():
            await JobRepository(session).update(job.id, owner=None, state=JobState.DELIVERED,
                                                result_files=[{"id": job.inputs[0], "kind": "photo"}])
    finally:
        await engine.dispose()
    status, mine = await world.get("results")
    assert status == 200 and [item["ref"] for item in mine["results"]] == [f"r.{job.id}.0"]
    assert (await world.get(f"photo?ref=r.{job.id}.0"))[0] == 200
    status, body = await world.get(f"photo?ref=r.{job.id}.0", BOB)
    assert (status, body["error"]) == (403, "not_yours")
    assert (await world.get("results", BOB))[1]["results"] == []
    assert (await world.post("share", {"photo": f"r.{job.id}.0"}, BOB))[0] == 403
    assert world.telegram.prepared_messages.for_user(BOB) == []


async def test_share_prepares_the_result_as_an_inline_message_for_its_owner(world: World) -> None:
    file_id = world.telegram.add_file(jpeg(320, 240))
    engine = create_engine(world.database_url)
    try:
        async with session_factory(engine)() as session, session.begin():
            job = await JobRepository(session).add(NewJob(
                chat_id=-100500, user_id=ALICE, reply_to_message_id=None, operation="art",
                args={"style": "oil", "prompt": ""}, inputs=[file_id], deadline_at=datetime.now(UTC),
                chat_type="supergroup"), now=datetime.now(UTC))
            await JobRepository(session).update(job.id, owner=None, state=JobState.DELIVERED,
                                                result_files=[{"id": file_id, "kind": "photo"}])
    finally:
        await engine.dispose()
    status, body = await world.post("share", {"photo": f"r.{job.id}.0"})
    assert status == 200, body
    [prepared] = world.telegram.prepared_messages.for_user(ALICE)
    assert prepared.id == body["id"]
    assert prepared.result["type"] == "photo" and prepared.result["photo_file_id"] == file_id


# --- jobs -----------------------------------------------------------------------------------------------------

async def test_replace_checks_the_mask_against_the_photo_size(world: World) -> None:
    ref = world.photo(jpeg(320, 240))
    status, body = await world.post("jobs/replace", {"photo": ref, "mask": mask_png((300, 240)), "prompt": "a cat"})
    assert (status, body["error"]) == (400, "mask_size")
    status, body = await world.post("jobs/replace", {"photo": ref, "mask": mask_png((320, 240), None), "prompt": "a cat"})
    assert (status, body["error"]) == (400, "paint_first")
    mask = mask_png((320, 240))
    status, body = await world.post("jobs/replace", {"photo": ref, "mask": mask, "prompt": "a red balloon"})
    assert status == 200, body
    [job] = await world.jobs()
    assert (job.operation, job.chat_id, job.user_id, job.args) == ("replace", ALICE, ALICE, {"prompt": "a red balloon"})
    assert job.inputs[0] == ref.split(".")[1]
    stored = await world.stored.load(job.inputs[1])
    assert stored is not None
    with Image.open(io.BytesIO(stored)) as kept, Image.open(io.BytesIO(base64.b64decode(mask.partition(",")[2]))) \
            as sent:  # re-encoded black and white, the same pixels
        assert (kept.format, kept.mode, kept.size) == ("PNG", "L", (320, 240))
        assert kept.tobytes() == sent.convert("L").tobytes()


async def test_replace_refuses_another_persons_photo(world: World) -> None:
    ref = world.photo(jpeg(320, 240), user_id=BOB)
    status, body = await world.post("jobs/replace", {"photo": ref, "mask": mask_png((320, 240)), "prompt": "a cat"})
    assert (status, body["error"]) == (403, "not_yours")
    assert await world.jobs() == []


async def test_expand_queues_the_paddings(world: World) -> None:
    ref = world.photo(png(400, 300))
    status, _ = await world.post("jobs/expand", {"photo": ref, "left": 50, "top": 0, "right": 50, "bottom": 100})
    assert status == 200
    [job] = await world.jobs()
    assert (job.operation, job.args) == ("expand", {"left": 50, "top": 0, "right": 50, "bottom": 100})
    status, body = await world.post("jobs/expand", {"photo": ref, "left": 0, "top": 0, "right": 0, "bottom": 0})
    assert (status, body["error"]) == (400, "bad_arguments")


async def test_expand_paddings_shrink_with_a_photo_larger_than_the_operation_takes(world: World) -> None:
    ref = world.photo(jpeg(4096, 1024))  # the worker fits it into 2048 px: half size
    assert (await world.post("jobs/expand", {"photo": ref, "left": 200, "top": 0, "right": 0, "bottom": 100}))[0] == 200
    [job] = await world.jobs()
    assert job.args == {"left": 100, "top": 0, "right": 0, "bottom": 50}


async def test_a_style_tap_queues_the_styled_job_and_costs_its_credits(world: World) -> None:
    ref = world.photo(jpeg(320, 240))
    status, body = await world.post("jobs/run", {"operation": "art", "style": "oil", "photo": ref})
    assert status == 200 and body["credits"] == 1
    status, body = await world.post("jobs/run", {"operation": "headshot", "style": "business", "count": 5,
                                                 "photo": ref})
    assert (status, body["error"]) == (402, "credits")  # 5 headshots cost 5, and 4 of the 5 free are left
    status, body = await world.post("jobs/run", {"operation": "headshot", "style": "business", "count": 2,
                                                 "photo": ref})
    assert status == 200 and body["credits"] == 2
    jobs = await world.jobs()
    assert [(job.operation, job.args) for job in jobs] == [
        ("art", {"style": "oil", "prompt": ""}), ("headshot", {"style": "business", "count": 2})]


async def test_a_refusal_is_said_in_the_persons_language(world: World) -> None:
    ref = world.photo(jpeg(320, 240))
    response = await world.client.post("/app/api/jobs/run", json={"operation": "headshot", "style": "business",
                                                                  "count": 6, "photo": ref},
                                       headers=world.auth(language="ar"))
    body = await response.json()
    assert (response.status, body["error"]) == (402, "credits")
    assert "نقاط" in body["message"] and "\u20686\u2069" in body["message"]  # six, isolated in the sentence


async def test_the_active_jobs_limit_applies(world: World) -> None:
    ref = world.photo(jpeg(320, 240))
    for _ in range(2):
        assert (await world.post("jobs/run", {"operation": "upscale", "argument": "2", "photo": ref}))[0] == 200
    status, body = await world.post("jobs/run", {"operation": "upscale", "argument": "2", "photo": ref})
    assert (status, body["error"]) == (429, "quota")
    assert "2" in body["message"]


async def test_text_operations_need_no_photo_and_one_taps_only_their_menu_arguments(world: World) -> None:
    status, _ = await world.post("jobs/run", {"operation": "imagine", "style": "anime", "prompt": "a fox"})
    assert status == 200
    ref = world.photo(jpeg(320, 240))
    status, body = await world.post("jobs/run", {"operation": "upscale", "argument": "8", "photo": ref})
    assert (status, body["error"]) == (400, "unknown_operation")
    status, body = await world.post("jobs/run", {"operation": "faceswap", "photo": ref})
    assert (status, body["error"]) == (400, "unknown_operation")


async def test_bodies_are_bounded(world: World) -> None:
    response = await world.client.post("/app/api/jobs/expand", data=b"{" + b" " * 20_000 + b"}",
                                       headers={**world.auth(), "Content-Type": "application/json"})
    assert response.status == 413
    response = await world.client.post("/app/api/jobs/replace", data=b"x" * (MAX_MASK_BODY + 1),
                                       headers={**world.auth(), "Content-Type": "application/json"})
    assert response.status == 413


# --- the page -------------------------------------------------------------------------------------------------

async def test_the_page_is_served_under_a_strict_policy(world: World) -> None:
    for path in ("/app/", "/app/app.js", "/app/api/me"):
        response = await world.client.get(path)
        policy = response.headers["Content-Security-Policy"]
        assert "default-src 'none'" in policy and "script-src 'self' https://telegram.org/js/telegram-web-app.js" \
            in policy and "'unsafe-inline'" not in policy, path
        assert response.headers["X-Content-Type-Options"] == "nosniff"
    page = await (await world.client.get("/app/")).text()
    assert "<script>" not in page and 'src="app.js"' in page
    assert (await world.client.get("/app/app_api.py")).status == 404
    assert (await world.client.get("/app/..%2Fapp_api.py")).status == 404


async def test_styles_show_their_previews_and_the_rendered_ones_are_served(world: World, tmp_path: Path) -> None:
    world.app.previews = tmp_path
    (tmp_path / "art-oil.jpg").write_bytes(jpeg(64, 64))
    status, body = await world.get("styles")
    assert status == 200
    groups = {group["operation"]: group for group in body["groups"]}
    assert list(groups) == ["imagine", "art", "headshot", "generate"]
    previews = {style["key"]: style["preview"] for style in groups["art"]["styles"]}
    assert previews.pop("oil") == "previews/art-oil.jpg" and set(previews.values()) == {None}
    assert groups["headshot"]["counts"] == [1, 2, 4] and groups["headshot"]["photo"] is True
    assert (groups["imagine"]["prompt"], groups["imagine"]["photo"]) == (True, False)
    response = await world.client.get("/app/previews/art-oil.jpg")
    assert (response.status, response.content_type) == (200, "image/jpeg")
    assert "default-src 'none'" in response.headers["Content-Security-Policy"]
    for path in ("/app/previews/art-watercolor.jpg", "/app/previews/..%2Fbot.db", "/app/previews/.hidden.jpg"):
        assert (await world.client.get(path)).status == 404, path


def test_preview_urls_a_style_file_names_are_the_only_other_picture_origins() -> None:
    data = json.loads(resources.files("bot.operations").joinpath("styles.json").read_text())
    data["art"]["styles"]["oil"]["preview"] = "https://cdn.example/previews/oil.jpg"
    data["art"]["styles"]["sketch"]["preview"] = "http://plain.example/sketch.jpg"  # not https: not used
    policy = content_security_policy(preview_origins(parse_catalogue(data)))
    assert "img-src 'self' blob: https://cdn.example;" in policy
