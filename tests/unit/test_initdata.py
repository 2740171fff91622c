"""Mini App initData: Telegram's signature, its age, the user it names, and the Authorization header."""

from __future__ import annotations

import time
from urllib.parse import parse_qsl, urlencode

import pytest

from bot.http import initdata
from bot.http.initdata import InitDataError, from_authorization, validate
from tests.fakes.telegram import DEFAULT_TOKEN
from tests.fakes.telegram_models import User
from tests.fakes.webapp import signed_init_data

ALICE = User(id=4242, first_name="Alice", username="alice", language_code="ar")
NOW = 1_790_000_000


def _replace(init_data: str, key: str, value: str) -> str:
    return urlencode([(k, value if k == key else v) for k, v in parse_qsl(init_data)])


def test_valid_init_data_names_the_user() -> None:
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW - 10, start_param="paint-17",
                            query_id="AAHdF6IQAAAAAN0XohDhrOrc", chat_type="sender")
    user = validate(data, DEFAULT_TOKEN, now=NOW)
    assert (user.user_id, user.first_name, user.language_code, user.start_param, user.auth_date) == (
        4242, "Alice", "ar", "paint-17", NOW - 10)


def test_signature_field_is_part_of_the_signed_fields() -> None:
    # Telegram's clients send `signature` (Ed25519, for third parties); the bot-token hash covers it too.
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW, signature="c2lnbmF0dXJl")
    assert validate(data, DEFAULT_TOKEN, now=NOW).user_id == 4242
    with pytest.raises(InitDataError):
        validate(_replace(data, "signature", "b3RoZXI"), DEFAULT_TOKEN, now=NOW)


def test_data_check_string_is_sorted_lines_without_hash() -> None:
    fields = {"user": '{"id":1}', "auth_date": "5", "hash": "x", "query_id": "q"}
    assert initdata.data_check_string(fields) == 'auth_date=5\nquery_id=q\nuser={"id":1}'


@pytest.mark.parametrize("field", ["user", "auth_date", "hash"])
def test_one_character_changed_is_refused(field: str) -> None:
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW)
    value = dict(parse_qsl(data))[field]
    changed = value[:-2] + ("0" if value[-2] != "0" else "1") + value[-1]
    with pytest.raises(InitDataError):
        validate(_replace(data, field, changed), DEFAULT_TOKEN, now=NOW)


def test_init_data_of_another_bot_is_refused() -> None:
    data = signed_init_data("987654:OTHER-token", ALICE, auth_date=NOW)
    with pytest.raises(InitDataError, match="hash"):
        validate(data, DEFAULT_TOKEN, now=NOW)


def test_expired_init_data_is_refused_and_the_age_is_a_parameter() -> None:
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW - 24 * 3600 - 1)
    with pytest.raises(InitDataError, match="expired"):
        validate(data, DEFAULT_TOKEN, now=NOW)
    assert validate(data, DEFAULT_TOKEN, now=NOW, max_age=48 * 3600).user_id == 4242
    fresh = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW - 120)
    with pytest.raises(InitDataError, match="expired"):
        validate(fresh, DEFAULT_TOKEN, now=NOW, max_age=60)


def test_auth_date_from_the_future_is_refused() -> None:
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW + 3600)
    with pytest.raises(InitDataError, match="future"):
        validate(data, DEFAULT_TOKEN, now=NOW)


def test_default_clock_is_now() -> None:
    assert validate(signed_init_data(DEFAULT_TOKEN, ALICE), DEFAULT_TOKEN).user_id == 4242
    old = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=int(time.time()) - 25 * 3600)
    with pytest.raises(InitDataError):
        validate(old, DEFAULT_TOKEN)


def test_missing_hash_is_refused() -> None:
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW)
    without = urlencode([(k, v) for k, v in parse_qsl(data) if k != "hash"])
    with pytest.raises(InitDataError, match="no hash"):
        validate(without, DEFAULT_TOKEN, now=NOW)


def test_missing_user_is_refused_even_when_signed() -> None:
    data = signed_init_data(DEFAULT_TOKEN, None, auth_date=NOW, query_id="q")
    with pytest.raises(InitDataError, match="no user"):
        validate(data, DEFAULT_TOKEN, now=NOW)


@pytest.mark.parametrize("user", [
    {"first_name": "No id"}, {"id": "4242", "first_name": "Text id"}, {"id": True, "first_name": "Bool"},
    {"id": 4242}, [4242],
])
def test_signed_but_malformed_user_is_refused(user: object) -> None:
    data = signed_init_data(DEFAULT_TOKEN, user if isinstance(user, dict) else "[4242]", auth_date=NOW)
    with pytest.raises(InitDataError):
        validate(data, DEFAULT_TOKEN, now=NOW)


def test_signed_user_that_is_not_json_is_refused() -> None:
    data = signed_init_data(DEFAULT_TOKEN, "{not json", auth_date=NOW)
    with pytest.raises(InitDataError, match="JSON"):
        validate(data, DEFAULT_TOKEN, now=NOW)


@pytest.mark.parametrize("garbage", ["", "hash", "a=1&&b=2", "%%%"])
def test_garbage_is_refused(garbage: str) -> None:
    with pytest.raises(InitDataError):
        validate(garbage, DEFAULT_TOKEN, now=NOW)


def test_a_repeated_field_is_refused() -> None:
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW)
    with pytest.raises(InitDataError, match="repeated"):
        validate(data + "&user=" + "%7B%22id%22%3A1%2C%22first_name%22%3A%22M%22%7D", DEFAULT_TOKEN, now=NOW)


def test_authorization_header() -> None:
    data = signed_init_data(DEFAULT_TOKEN, ALICE, auth_date=NOW)
    assert from_authorization(f"tma {data}", DEFAULT_TOKEN, now=NOW).user_id == 4242
    assert from_authorization(f"TMA  {data} ", DEFAULT_TOKEN, now=NOW).user_id == 4242
    for header in (None, "", "tma", "tma ", f"Bearer {data}", data, f"tma{data}"):
        with pytest.raises(InitDataError):
            from_authorization(header, DEFAULT_TOKEN, now=NOW)
    with pytest.raises(InitDataError, match="expired"):
        from_authorization(f"tma {data}", DEFAULT_TOKEN, now=NOW + 2 * 24 * 3600)
