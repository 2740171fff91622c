"""Buying credits in the Mini App (`POST /app/api/invoice`): a link to the Stars invoice of a pack on sale, made by
the fake Bot API's createInvoiceLink exactly as the chat's /buy makes its invoice, and nothing for anyone else."""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qsl, urlencode

from bot.credits import Pack
from bot.credits.texts import invoice_description, invoice_title, pack_button
from bot.http.app_limits import RequestBudget
from tests.fakes.samples import jpeg
from tests.fakes.telegram_models import User
from tests.fakes.webapp import signed_init_data
from tests.integration.test_app_api import ALICE, BOB, STRANGER, World, world  # noqa: F401 (the fixture)

PACKS = (Pack(10, 50), Pack(100, 400))


def on_sale(world: World) -> None:  # noqa: F811
    world.app.packs, world.app.can_buy = PACKS, True


async def test_me_offers_the_packs_and_a_pack_gets_the_link_to_its_stars_invoice(world: World) -> None:  # noqa: F811
    on_sale(world)
    status, me = await world.get("me", language="ar")
    assert status == 200
    assert me["packs"] == [{"id": "10:50", "label": pack_button("ar", 10, 50)},
                           {"id": "100:400", "label": pack_button("ar", 100, 400)}]
    response = await world.client.post("/app/api/invoice", json={"pack": "100:400"}, headers=world.auth(language="ar"))
    assert response.status == 200 and response.headers["Cache-Control"] == "no-store"
    link = (await response.json())["link"]
    # the chat's /buy invoice: its payload, price and texts, in the person's language
    assert world.telegram.payments.links[link] == {
        "title": invoice_title("ar", 100), "description": invoice_description("ar", 100), "currency": "XTR",
        "total_amount": 400, "payload": "credits:100:400"}


async def test_the_out_of_credits_refusal_points_at_the_packs_beside_it(world: World) -> None:  # noqa: F811
    ref = world.photo(jpeg(320, 240))
    status, body = await world.post("jobs/run", {"operation": "headshot", "style": "business", "count": 6,
                                                 "photo": ref})
    assert (status, body["error"]) == (402, "credits") and "/buy" not in body["message"]  # nothing on sale yet
    on_sale(world)
    status, body = await world.post("jobs/run", {"operation": "headshot", "style": "business", "count": 6,
                                                 "photo": ref})
    assert (status, body["error"]) == (402, "credits") and "Pick a pack below" in body["message"]


async def test_bogus_packs_and_packs_off_sale_make_no_link(world: World) -> None:  # noqa: F811
    assert (await world.post("invoice", {"pack": "10:50"}))[1]["error"] == "pack_gone"  # nothing on sale
    on_sale(world)
    world.app.budget = RequestBudget(burst=1000)  # many tries here; bursts are the next test's
    for pack in ("10:51", "11:50", "0:0", "credits:10:50", "10:50:50", "10", "", " 10:50", "１０:50", "10:50\x00",
                 "9" * 5000, 10, 10.5, None, True, ["10:50"], {"id": "10:50"}):
        status, body = await world.post("invoice", {"pack": pack})
        assert (status, body["error"]) == (400, "pack_gone"), pack
    for raw in (b"", b"[]", b'"10:50"', b"{", b'{"pack": "10:50"' + b" " * 20000 + b"}"):
        response = await world.client.post("/app/api/invoice", data=raw, headers=world.auth())
        assert 400 <= response.status < 500, raw
    assert world.telegram.payments.links == {}


async def test_only_fresh_init_data_of_an_allowed_person_gets_a_link(world: World) -> None:  # noqa: F811
    on_sale(world)
    forged = signed_init_data("1:not-the-bots-token", User(BOB, "Bob"))
    tampered = urlencode([(key, value.replace(str(BOB), str(ALICE))) for key, value
                          in parse_qsl(signed_init_data(world.telegram.token, User(BOB, "Bob")))])
    for authorization in ("tma " + forged, "tma " + tampered, "Bearer x", ""):
        response = await world.client.post("/app/api/invoice", json={"pack": "10:50"},
                                           headers={"Authorization": authorization})
        assert response.status == 401, authorization
    response = await world.client.post("/app/api/invoice", json={"pack": "10:50"},
                                       headers=world.auth(age=2 * 86400))
    assert response.status == 401
    status, body = await world.post("invoice", {"pack": "10:50"}, STRANGER)
    assert (status, body["error"]) == (403, "not_allowed")
    # who pays is Telegram's payer, never a name in the body
    status, body = await world.post("invoice", {"pack": "10:50", "user_id": ALICE}, BOB)
    assert status == 200 and "user" not in str(world.telegram.payments.links[body["link"]])
    assert len(world.telegram.payments.links) == 1


async def test_a_burst_of_invoice_requests_is_slowed_to_the_budget(world: World) -> None:  # noqa: F811
    on_sale(world)
    world.app.budget = RequestBudget(burst=60, rate=0.001)
    answers = await asyncio.gather(*(world.post("invoice", {"pack": "10:50"}) for _ in range(40)))
    statuses = sorted(status for status, _ in answers)
    assert statuses.count(200) == 12 and statuses.count(429) == 28  # an invoice costs five reads of sixty
    assert len(world.telegram.payments.links) == 12
    assert (await world.post("invoice", {"pack": "10:50"}, BOB))[0] == 200  # each person's own budget
