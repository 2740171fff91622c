"""The worker's failure tables: the most specific match wins, and each outcome is what the worker needs."""

from __future__ import annotations

import pytest

from bot.aiart.errors import (
    AiartError,
    APIError,
    BadRequest,
    ConnectError,
    MalformedResponse,
    NoCredits,
    RateLimited,
    ServerError,
    Timeout,
    Unauthorized,
)
from bot.images import ImageRejected
from bot.jobs.failures import (
    DELIVER_FAILURES,
    POLL_FAILURES,
    SUBMIT_FAILURES,
    Fail,
    GiveUp,
    Retry,
    classify,
    failure_of,
    retry_after_of,
)
from bot.jobs.notifier import DeliveryError, Failure, FailureKind, InputUnavailable
from bot.jobs.results import ResultUnavailable
from bot.operations.catalogue import ArgumentError, StyleMissing


class Base(Exception):
    pass


class Middle(Base):
    pass


class Leaf(Middle):
    pass


class Other(Exception):
    pass


def test_the_most_specific_match_wins_whatever_the_order_of_the_table():
    table = {Base: Retry(), Leaf: Fail(FailureKind.DELIVERY), Middle: GiveUp(FailureKind.UNAVAILABLE)}
    reversed_table = dict(reversed(list(table.items())))
    for each in (table, reversed_table):
        assert classify(Leaf(), each) == Fail(FailureKind.DELIVERY)
        assert classify(Middle(), each) == GiveUp(FailureKind.UNAVAILABLE)
        assert classify(Base(), each) == Retry()


def test_an_error_the_table_does_not_name_is_not_classified():
    assert classify(Other(), {Base: Retry()}) is None
    assert classify(KeyError("bug"), SUBMIT_FAILURES) is None


def test_an_entry_may_decide_from_the_error_itself():
    table = {Base: lambda error: Retry(counted=str(error) == "paid")}
    assert classify(Leaf("paid"), table) == Retry(counted=True)
    assert classify(Leaf("free"), table) == Retry(counted=False)


def api(cls: type[APIError], message: str = "msg", status: int = 400) -> APIError:
    return cls(message, status_code=status)


@pytest.mark.parametrize(("error", "outcome"), [
    (ImageRejected("That file is not an image."), Fail(FailureKind.BAD_INPUT)),
    (ArgumentError("Give the padding in pixels."), Fail(FailureKind.BAD_INPUT)),
    (StyleMissing("no style"), Fail(FailureKind.BAD_INPUT)),
    (ValueError("prompt too long"), Fail(FailureKind.BAD_INPUT)),
    (InputUnavailable("file gone", permanent=True), Fail(FailureKind.BAD_INPUT)),
    (InputUnavailable("download failed", permanent=False), Retry(counted=False)),
    (api(BadRequest), Fail(FailureKind.REJECTED)),
    (api(NoCredits, status=200), GiveUp(FailureKind.NO_CREDITS, "the service account has no credits left")),
    (api(RateLimited, status=429), Retry(counted=False)),
    (ConnectError("refused"), Retry(counted=False)),
    (Timeout("slow"), Retry(counted=True)),
    (api(ServerError, status=503), Retry(counted=True)),
    (MalformedResponse("not json"), Retry(counted=True)),
    (AiartError("anything else"), Retry(counted=True)),
])
def test_submit_outcomes(error: Exception, outcome: object):
    assert classify(error, SUBMIT_FAILURES) == outcome


def test_a_refused_api_key_gives_up_and_tells_the_operator_not_the_user():
    outcome = classify(api(Unauthorized, status=401), SUBMIT_FAILURES)
    assert isinstance(outcome, GiveUp) and outcome.kind is FailureKind.UNAVAILABLE
    assert outcome.log is not None and "AIART_API_KEY" in outcome.log
    assert failure_of(api(Unauthorized, "key abc is invalid", 401), outcome) == Failure(FailureKind.UNAVAILABLE)


@pytest.mark.parametrize(("error", "outcome"), [
    (api(BadRequest), Fail(FailureKind.SERVICE_FAILED)),
    (api(RateLimited, status=429), Retry(counted=False)),
    (api(ServerError, status=502), Retry(counted=False)),
    (Timeout("slow"), Retry(counted=False)),
    (api(Unauthorized, status=401), Retry(counted=False)),  # a GET is retried until the deadline
])
def test_poll_outcomes(error: Exception, outcome: object):
    assert classify(error, POLL_FAILURES) == outcome


@pytest.mark.parametrize(("error", "outcome"), [
    (ResultUnavailable("result link answered 404", permanent=True), Fail(FailureKind.DELIVERY)),
    (ResultUnavailable("result link answered 502", permanent=False), Retry()),
    (DeliveryError("Request Entity Too Large"), Fail(FailureKind.DELIVERY)),
    (DeliveryError("Too Many Requests", retry_after=3.5), Retry()),
])
def test_deliver_outcomes(error: Exception, outcome: object):
    assert classify(error, DELIVER_FAILURES) == outcome


def test_a_fail_shows_the_errors_own_words_and_a_give_up_does_not():
    assert failure_of(api(BadRequest, "upscaling_resize out of range"), Fail(FailureKind.REJECTED)) == Failure(
        FailureKind.REJECTED, "upscaling_resize out of range")
    assert failure_of(ValueError(""), Fail(FailureKind.BAD_INPUT)) == Failure(FailureKind.BAD_INPUT)
    assert failure_of(api(NoCredits, "code 510"), GiveUp(FailureKind.NO_CREDITS)) == Failure(FailureKind.NO_CREDITS)


def test_retry_after_is_taken_from_errors_that_carry_it():
    assert retry_after_of(RateLimited("slow down", retry_after=7)) == 7.0
    assert retry_after_of(DeliveryError("flood", retry_after=2.5)) == 2.5
    assert retry_after_of(RateLimited("slow down")) is None
    assert retry_after_of(ServerError("down", status_code=503)) is None
