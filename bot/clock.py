"""The one wall clock: every part takes a `clock` callable defaulting to this, so tests can inject their own."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    """Now, timezone-aware in UTC."""
    return datetime.now(UTC)
