"""What the worker does about an error in a step: one table per step, from exception type to outcome.

    Outcome
     ├── Retry    try the step again later; `counted` when the try may have cost something
     ├── Fail     end the job and tell the user why (the error's text is written to be shown)
     └── GiveUp   end the job with a fixed failure; the error itself is for the operator's log

As in httpx's `map_exceptions`, a table maps exception types to outcomes and the most specific
match wins: the first of the error's classes, in method resolution order, that the table names.
An entry may also be a function of the error, for errors that carry their own verdict (`permanent`).
An error the table does not name is a bug: the step lets it through.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from bot.aiart.errors import AiartError, BadRequest, ConnectError, NoCredits, RateLimited, Unauthorized
from bot.i18n import Text
from bot.jobs.notifier import DeliveryError, Failure, FailureKind, InputUnavailable
from bot.jobs.results import ResultUnavailable


@dataclass(frozen=True)
class Retry:
    """Try the step again after a backoff; `counted` uses up one of the job's limited attempts."""

    counted: bool = True


@dataclass(frozen=True)
class Fail:
    """End the job as `kind`, telling the user the error's own text."""

    kind: FailureKind


@dataclass(frozen=True)
class GiveUp:
    """End the job as `kind` without the error's text; `log` tells the operator what to fix."""

    kind: FailureKind
    log: str | None = None


Outcome = Retry | Fail | GiveUp
Rule = Outcome | Callable[[BaseException], Outcome]
FailureTable = Mapping[type[BaseException], Rule]


def classify(error: BaseException, table: FailureTable) -> Outcome | None:
    """The outcome of the most specific entry of `table` that matches `error`; None when none does."""
    for cls in type(error).__mro__:
        rule = table.get(cls)
        if rule is not None:
            return rule(error) if callable(rule) else rule
    return None


def failure_of(error: BaseException, outcome: Fail | GiveUp) -> Failure:
    """The failure to tell the user about (only a Fail shows the error's text: its `Text`, in the user's language,
    when it carries one)."""
    if not isinstance(outcome, Fail):
        return Failure(outcome.kind)
    shown = getattr(error, "text", None)
    return Failure(outcome.kind, shown if isinstance(shown, Text) else (str(error) or None))


def retry_after_of(error: BaseException) -> float | None:
    """The wait the other side asked for (a 429's Retry-After, Telegram's retry_after), if any."""
    retry_after = getattr(error, "retry_after", None)
    return float(retry_after) if retry_after is not None else None


def _input_unavailable(error: BaseException) -> Outcome:
    assert isinstance(error, InputUnavailable)
    # a download that failed before the service was reached costs nothing, however often it is tried
    return Fail(FailureKind.BAD_INPUT) if error.permanent else Retry(counted=False)


def _result_unavailable(error: BaseException) -> Outcome:
    assert isinstance(error, ResultUnavailable)
    return Fail(FailureKind.DELIVERY) if error.permanent else Retry()


def _delivery_error(error: BaseException) -> Outcome:
    assert isinstance(error, DeliveryError)
    # no retry_after: Telegram refused the result itself (too large, chat gone)
    return Retry() if error.retry_after is not None else Fail(FailureKind.DELIVERY)


#: submitting a job: preparing its input, handing it over, the POST
SUBMIT_FAILURES: FailureTable = {
    # the request's own checks refused it: ImageRejected, ArgumentError, a payload out of range
    ValueError: Fail(FailureKind.BAD_INPUT),
    InputUnavailable: _input_unavailable,
    NoCredits: GiveUp(FailureKind.NO_CREDITS, "the service account has no credits left"),
    Unauthorized: GiveUp(FailureKind.UNAVAILABLE, "the service refused the API key (HTTP 401); check AIART_API_KEY"),
    BadRequest: Fail(FailureKind.REJECTED),  # never sent again
    # the service surely made no task: these cost nothing
    RateLimited: Retry(counted=False),
    ConnectError: Retry(counted=False),
    # 5xx, timeouts, malformed answers: a task (which costs a token) may have been made
    AiartError: Retry(counted=True),
}

#: checking a task's status (a GET: safe to repeat until the deadline)
POLL_FAILURES: FailureTable = {
    BadRequest: Fail(FailureKind.SERVICE_FAILED),
    AiartError: Retry(counted=False),
}

#: downloading the results and sending them to the chat
DELIVER_FAILURES: FailureTable = {
    ResultUnavailable: _result_unavailable,
    DeliveryError: _delivery_error,
}
