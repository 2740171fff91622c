"""One corpus of hostile input for every HTTP entry and every kind of update, against the real bot (issue 28).

The bot runs in webhook mode with the Mini App, service callbacks and media links on. Every HTTP case must be
answered with a 4xx (or, where the input is well-formed, the entry's ordinary answer) and store nothing; every
update must get its reply (a message, a callback answer, an inline answer); and nothing may log a traceback.
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from PIL import Image
from sqlalchemy import func, select
from yarl import URL

from bot.http.app_refs import PhotoRefs
from bot.http.webhook import SECRET_HEADER, derive_webhook_secret
from bot.sandbox import Sandbox
from bot.store import create_engine
from bot.store.models import conversations_table, jobs_table, ledger_table
from tests.e2e.conftest import ALICE
from tests.fakes import samples
from tests.fakes.telegram import FakeTelegram, User, private_chat
from tests.fakes.webapp import signed_init_data
from tests.harness import InProcessBot, bot_settings, settings_of, sqlite_url
from tests.integration.test_app_api import painted_bomb_png

CALLBACK_PATH = "/aiart/callback-hostile"
#: nesting deeper than any parser's recursion, and wide enough to be costly
DEEP = [b"[" * 100_000 + b"]" * 100_000, b'{"a":' * 60_000 + b"1" + b"}" * 60_000, b"{" * 300_000]
#: bodies that are not JSON objects, or not JSON at all
BROKEN = [b"", b"{", b'{"update_id": 1', b"[1, 2]", b"\xff\xfe\x00{}", b"1" * 5000, b"null", b'"\\ud800"']


@pytest.fixture
def values(tmp_path: Path, telegram: FakeTelegram, sandbox: Sandbox) -> dict[str, str]:
    previews = tmp_path / "previews"
    previews.mkdir()
    (previews / "art-oil.jpg").write_bytes(samples.jpeg(64, 64))
    (tmp_path / "secret.png").write_bytes(samples.png(64, 64))
    return bot_settings(telegram, sandbox, sqlite_url(tmp_path / "bot.db"), webhook=True,
                        aiart_webhook_path=CALLBACK_PATH, public_url="https://bot.example", previews_dir=previews,
                        worker_id="hostile-worker")


@pytest.fixture
async def running(values: dict[str, str], telegram: FakeTelegram) -> AsyncIterator[InProcessBot]:
    telegram.inline.enabled = True
    bot = InProcessBot(settings_of(values), telegram)
    await bot.start()
    yield bot
    await bot.stop()


async def stored(database_url: str) -> dict[str, int]:
    """Rows of the tables a request could grow."""
    engine = create_engine(database_url)
    try:
        async with engine.connect() as connection:
            return {table.name: int(await connection.scalar(select(func.count()).select_from(table)) or 0)
                    for table in (jobs_table, conversations_table, ledger_table)}
    finally:
        await engine.dispose()


def mask_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


def http_corpus(values: dict[str, str], telegram: FakeTelegram, photo_ref: str) -> list[tuple[str, str, str, dict,
                                                                                           bytes, set[int]]]:
    """(name, method, url, headers, body, the statuses it may get)."""
    root = f"http://127.0.0.1:{values['HTTP_PORT']}"
    webhook = {SECRET_HEADER: derive_webhook_secret(telegram.token), "Content-Type": "application/json"}
    app = {"Authorization": "tma " + signed_init_data(telegram.token, ALICE), "Content-Type": "application/json"}
    four = set(range(400, 500))
    cases = []
    for number, body in enumerate(DEEP + BROKEN + [b"x" * (1024 * 1024 + 1)]):
        cases.append((f"webhook {number}", "POST", values["TELEGRAM_WEBHOOK_URL"], webhook, body, four))
        cases.append((f"callback {number}", "POST", root + CALLBACK_PATH, {}, body, four))
    for number, update in enumerate([{"update_id": "²"}, {"update_id": 10**30}, {"update_id": -(10**30)},
                                     {"update_id": 1.5}, {"update_id": True}]):
        cases.append((f"webhook odd id {number}", "POST", values["TELEGRAM_WEBHOOK_URL"], webhook,
                      json.dumps(update).encode(), four))
    for number, callback in enumerate([{"taskId": "x" * 300}, {"taskId": 1e308}, {"taskId": ["a"]}]):
        cases.append((f"callback odd {number}", "POST", root + CALLBACK_PATH, {}, json.dumps(callback).encode(), four))
    cases.append(("callback unknown task", "POST", root + CALLBACK_PATH, {}, b'{"taskId": "\xc2\xb2"}', {200}))
    noise = Image.frombytes("L", (64, 48), bytes(range(256)) * 12)
    out = io.BytesIO()
    noise.save(out, "PNG")
    api = root + "/app/api/"
    for path in ("jobs/run", "jobs/expand", "jobs/replace", "share", "invoice"):
        for number, body in enumerate(DEEP + BROKEN):
            cases.append((f"{path} {number}", "POST", api + path, app, body, four))
    for number, body in enumerate([
            {"photo": photo_ref, "mask": mask_url(out.getvalue()[:300]), "prompt": "a cat"},  # truncated
            {"photo": photo_ref, "mask": mask_url(painted_bomb_png(8000, 5000)), "prompt": "a cat"},  # 40 MP
            {"photo": photo_ref, "mask": mask_url(samples.decompression_bomb_png()), "prompt": "a cat"},
            {"photo": photo_ref, "mask": "data:image/png;base64," + "A" * 100, "prompt": "x" * 100_000},
            {"photo": "f.²." + "a" * 40, "mask": mask_url(out.getvalue()), "prompt": "a cat"}]):
        cases.append((f"replace {number}", "POST", api + "jobs/replace", app, json.dumps(body).encode(), four))
    for number, body in enumerate([{"photo": photo_ref, "left": "²", "top": 0, "right": 0, "bottom": 0},
                                   {"photo": photo_ref, "left": 10**40, "top": 0, "right": 0, "bottom": 0},
                                   {"operation": "headshot", "style": "business", "count": "²", "photo": photo_ref},
                                   {"operation": "²" * 1000}]):
        cases.append((f"api odd {number}", "POST", api + ("jobs/expand" if number < 2 else "jobs/run"), app,
                      json.dumps(body).encode(), four))
    for number, ref in enumerate(["²", "f." * 2000, "r.².0", "r.99999999999999999999999.0", "%00"]):
        cases.append((f"photo ref {number}", "GET", api + "photo?ref=" + ref, app, b"", four))
        cases.append((f"picture ref {number}", "GET", api + "picture?size=thumb&ref=" + ref, app, b"", four))
    # pictures as another person, whose request budget the cases above have not spent
    carol = User(1003, "Carol", language_code="en")
    app = {"Authorization": "tma " + signed_init_data(telegram.token, carol), "Content-Type": "application/json"}
    refs = PhotoRefs(telegram.token)
    carols = refs.photo(carol.id, telegram.add_file(samples.jpeg(320, 240)))
    for number, data in enumerate([samples.decompression_bomb_png(), samples.truncated_jpeg(),
                                   painted_bomb_png(20000, 10000)]):  # documents: kept as sent, decoded for a copy
        document = telegram._state.store_document(data, "bomb.png", "image/png")["file_id"]
        cases.append((f"picture of a bomb {number}", "GET",
                      api + "picture?size=display&ref=" + refs.photo(carol.id, document), app, b"", {400}))
    for number, query in enumerate(["size=²", "size=" + "x" * 4000, "size=%00"]):
        cases.append((f"picture size {number}", "GET", api + f"picture?ref={carols}&" + query, app, b"", four))
    for path in ("pending?limit=" + "9" * 100, "screens?x=%C2%B2", f"picture?ref={carols}&size=thumb&size=display"):
        cases.append((path, "GET", api + path, app, b"", {200}))
    secret = str(Path(values["PREVIEWS_DIR"]).parent / "secret.png").replace("/", "%2F")
    for number, tail in enumerate([secret, "..%2Fsecret.png", "%2E%2E%2Fsecret.png", "art-oil.jpg%00.png",
                                   "%C2%B2.png"]):
        cases.append((f"preview {number}", "GET", root + "/app/previews/" + tail, {}, b"", {404}))
    # a request line aiohttp cannot parse: answered 400 before any handler, logged in one line
    cases.append(("raw unicode path", "GET", root + "/app/previews/².png", {}, b"", {400}))
    for number, token in enumerate(["²", "..%2F..%2Fetc%2Fpasswd", "a" * 4000, "x.y.z", "%00"]):
        cases.append((f"media {number}", "GET", root + "/media/" + token, {}, b"", four))
    for probe in ("/healthz", "/readyz", "/metrics"):
        cases.append((f"{probe} post", "POST", root + probe, {}, b"{" * 10_000, {405}))
        cases.append((f"{probe} query", "GET", root + probe + "?x=" + "%C2%B2" * 100, {}, b"", {200}))
    return cases


async def test_every_http_entry_answers_hostile_input_with_a_4xx_and_stores_nothing(
        running: InProcessBot, values: dict[str, str], telegram: FakeTelegram, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)

    photo_ref = PhotoRefs(telegram.token).photo(ALICE.id, telegram.add_file(samples.jpeg(320, 240)))
    before = await stored(values["DATABASE_URL"])
    answered = []
    async with aiohttp.ClientSession() as session:
        for name, method, url, headers, body, allowed in http_corpus(values, telegram, photo_ref):
            async with session.request(method, URL(url, encoded=True), headers=headers, data=body) as response:
                await response.read()
                answered.append((name, response.status))
                assert response.status in allowed, (name, response.status)
    assert await stored(values["DATABASE_URL"]) == before
    assert "Traceback" not in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR], answered


async def test_every_kind_of_update_answers_hostile_input_without_a_traceback(
        running: InProcessBot, telegram: FakeTelegram, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    chat = private_chat(ALICE)
    telegram.user_sends(chat, ALICE, text="/start")
    await telegram.wait_for(lambda: len(telegram.sent(chat.id)) >= 1, timeout=20)
    commands = ["/expand ² ² ² ²", "/upscale ²", "/headshot business ²", "/imagine " + "x" * 4000, "/language ²",
                "/cancel ²", "/history ²", "/balance ²", "/start " + "²" * 60, "/start app-paint-²-²", "/pool add ²",
                "/pool cap ²", "/refund ²", "/retouch " + "\u202e" * 500, "/generate ² ² ²", "/art ² ²"]
    for text in commands:
        sent = len(telegram.sent(chat.id))
        telegram.user_sends(chat, ALICE, text=text)
        await telegram.wait_for(lambda sent=sent: len(telegram.sent(chat.id)) > sent, timeout=20)
    for caption, document in [("/upscale", (samples.truncated_jpeg(), "cut.jpg", "image/jpeg")),
                              ("/upscale", (samples.decompression_bomb_png(), "bomb.png", "image/png")),
                              ("/expand ² 1 1 1", (samples.jpeg(320, 240), "ok.jpg", "image/jpeg"))]:
        sent = len(telegram.sent(chat.id))
        telegram.user_sends(chat, ALICE, caption=caption, document=document)
        await telegram.wait_for(lambda sent=sent: len(telegram.sent(chat.id)) > sent, timeout=30)
    message_id = telegram.sent(chat.id)[0].message_id
    presses = [telegram._state.user_press(chat, ALICE, message_id, data, crafted=True) for data in (
        "fu:²:again", "fu:1:next:x:y:²", "fu:" + "9" * 60, "hi:٣", "lang:²", "set:²", "buy:²:²", "op:²", "st:²",
        "ar:²", "x" * 64, "subx:²", "subx:cancel", "plan:²:²", "plan:300:1", "gq:²:²", "gq:upscale:²")]
    await telegram.wait_for(lambda: all(press in telegram._state.callback_answers for press in presses), timeout=20)
    queries = [telegram.inline.user_types(ALICE, text, offset=offset) for text, offset in (
        ("a cat", "²"), ("a cat", "9" * 64), ("x" * 256, ""), ("²", "-1"), ("", "٣"))]
    await telegram.wait_for(lambda: all(telegram.inline.queries[query].answer is not None for query in queries),
                            timeout=20)
    await asyncio.sleep(0.5)  # anything still running finishes into the log
    assert "Traceback" not in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
