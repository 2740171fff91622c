"""Result captions: the sandbox mark while there is no service key, never cut off, and nothing without it;
styles by their translated names; inline messages, which everyone in a chat reads, without a price."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.operations.registry import build_catalogue
from bot.operations.styles import load_catalogue
from bot.store import JobRecord, JobState
from bot.tg import texts

OPERATIONS = build_catalogue(load_catalogue())


def test_a_result_from_the_service_says_only_what_was_done():
    assert texts.result_caption("Upscale ×2", sandbox=False) == "✅ Upscale ×2"


def test_a_sandbox_result_is_marked():
    assert texts.result_caption("Upscale ×2", sandbox=True) == "✅ Upscale ×2\n" + texts.SANDBOX_MARK


def test_the_mark_survives_a_description_as_long_as_a_caption():
    long_prompt = "Imagine: " + "a very detailed lighthouse " * 60
    marked = texts.result_caption(long_prompt, sandbox=True)
    plain = texts.result_caption(long_prompt, sandbox=False)
    assert len(marked) <= texts.CAPTION_LIMIT and len(plain) == texts.CAPTION_LIMIT
    assert marked.endswith("…\n" + texts.SANDBOX_MARK)


def _job(operation: str, args: dict, **changes) -> JobRecord:
    at = datetime(2026, 11, 28, 7, 25, tzinfo=UTC)
    fields = dict(id=1, chat_id=1, user_id=1, chat_type="private", reply_to_message_id=None, status_message_id=None,
                  operation=operation, args=args, inputs=[], task_id=None, state=JobState.RUNNING, attempts=0,
                  next_check_at=at, deadline_at=at, lease_owner=None, lease_until=None, result_urls=[], error=None,
                  sent_message_ids=[], created_at=at, updated_at=at, submitted_at=None, finished_at=None,
                  language="ru", credits=2)
    return JobRecord(**{**fields, **changes})


def test_a_caption_names_the_style_in_the_readers_language_and_says_the_cost():
    art = OPERATIONS["art"]
    said = texts.result_text(_job("art", art.parse("watercolor")), art, sandbox=False)
    assert said == "✅ Арт: Акварель · 2 кредита"


def test_an_inline_message_speaks_to_everyone_in_its_chat_without_a_price():
    imagine = OPERATIONS["imagine"]
    job = _job("imagine", imagine.parse("cartoon a cat"), inline_message_id="inline")
    caption = texts.result_text(job, imagine, sandbox=False)
    progress = [texts.progress_text(job, imagine, seconds) for seconds in (0, 12)]
    assert caption == "✅ Рисунок (Мультяшный, 1:1): a cat"
    assert progress == ["⏳ Рисунок (Мультяшный, 1:1): a cat — в работе…",
                        "⏳ Рисунок (Мультяшный, 1:1): a cat — в работе уже 12 секунд…"]
    # the requester's own chat still hears "I'll reply" and the price
    mine = _job("imagine", imagine.parse("cartoon a cat"))
    assert "кредит" in texts.result_text(mine, imagine, sandbox=False)
    assert "Пришлю результат" in texts.progress_text(mine, imagine, 12)
