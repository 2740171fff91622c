"""The Mini App's cache of picture copies (bot.http.app_pictures.CopyCache) stays bounded however small the copies."""

from __future__ import annotations

from bot.http.app_pictures import Copy, CopyCache


def test_many_tiny_copies_hold_no_more_than_the_caches_limit() -> None:
    """Hostile review: only the copies' bytes were counted, so a person asking for copies of many 1 px pictures
    (40 bytes each) kept 600,000 entries (several hundred megabytes of keys and objects) under a 24 MB limit."""
    cache = CopyCache(limit=1024 * 1024)
    for number in range(20_000):
        cache.put((f"file-{number}", "thumb"), Copy(b"x" * 40, "image/webp", f'"{number}"', (1, 1)))
    assert len(cache._items) <= 1024
    assert cache.get(("file-19999", "thumb")) is not None and cache.get(("file-0", "thumb")) is None
