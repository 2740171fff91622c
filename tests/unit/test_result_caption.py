"""Result captions: the sandbox mark while there is no service key, never cut off, and nothing without it."""

from __future__ import annotations

from bot.tg import texts


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
