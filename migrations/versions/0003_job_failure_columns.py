"""Jobs keep what `error` used to encode in columns: `refused` and `failure_kind`; `error` keeps the reason.

Before, `error` carried state as text prefixes: "refused: <reason>" for a request refused in the chat
(not counted in quotas), "notice pending: <kind>|<detail>" for an unfinished job whose failure was
decided but not yet told, and "<kind>: <detail>" (or "<kind>") for a failed job. The upgrade moves
each into the columns and leaves only the human reason in `error`; the downgrade writes the prefixes back.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | Sequence[str] | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: the failure kinds as this revision knows them (bot.jobs.notifier.FailureKind), frozen here on purpose
KINDS = ("bad_input", "rejected", "content", "service_failed", "no_credits", "unavailable", "expired", "delivery")
REFUSED = "refused:"
NOTICE_PENDING = "notice pending: "
FINAL = ("delivered", "failed", "expired", "cancelled")

jobs = sa.table(
    "jobs",
    sa.column("state", sa.String()),
    sa.column("error", sa.Text()),
    sa.column("refused", sa.Boolean()),
    sa.column("failure_kind", sa.String()),
)


def _starts(prefix: str) -> sa.ColumnElement[bool]:
    """`error` starts with `prefix` (compared as a substring: LIKE would read the `_` in kinds as a wildcard)."""
    return sa.func.substr(jobs.c.error, 1, len(prefix)) == prefix


def _after(prefix: str) -> sa.ColumnElement[str]:
    """What follows `prefix` in `error`, NULL when nothing does."""
    return sa.func.nullif(sa.func.substr(jobs.c.error, len(prefix) + 1), "")


def upgrade() -> None:
    """Add jobs.refused and jobs.failure_kind, and move what `error` encoded into them."""
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("refused", sa.Boolean(), nullable=False, server_default=sa.false()))
        batch.add_column(sa.Column("failure_kind", sa.String(16), nullable=True))

    op.execute(jobs.update().where(_starts(REFUSED))
               .values(refused=True, failure_kind="bad_input",
                       error=sa.func.nullif(sa.func.ltrim(sa.func.substr(jobs.c.error, len(REFUSED) + 1)), "")))
    for kind in KINDS:
        pending = f"{NOTICE_PENDING}{kind}|"
        op.execute(jobs.update().where(_starts(pending)).values(failure_kind=kind, error=_after(pending)))
    # a pending notice of a kind this revision does not know was told as "unavailable"
    op.execute(jobs.update().where(_starts(NOTICE_PENDING)).values(failure_kind="unavailable", error=None))
    unparsed = sa.and_(jobs.c.failure_kind.is_(None), jobs.c.state.in_(("failed", "expired")))
    for kind in KINDS:
        op.execute(jobs.update().where(unparsed, jobs.c.error == kind).values(failure_kind=kind, error=None))
        op.execute(jobs.update().where(unparsed, _starts(f"{kind}: "))
                   .values(failure_kind=kind, error=_after(f"{kind}: ")))


def downgrade() -> None:
    """Write the prefixes back into `error`, then drop jobs.refused and jobs.failure_kind."""
    reason = sa.func.coalesce(jobs.c.error, "")
    op.execute(jobs.update().where(jobs.c.refused.is_(True)).values(error=sa.literal(f"{REFUSED} ") + reason))
    told = sa.and_(jobs.c.refused.is_(False), jobs.c.failure_kind.is_not(None))
    op.execute(jobs.update().where(told, jobs.c.state.not_in(FINAL))
               .values(error=sa.literal(NOTICE_PENDING) + jobs.c.failure_kind + "|" + reason))
    finished = sa.and_(told, jobs.c.state.in_(FINAL))
    op.execute(jobs.update().where(finished, jobs.c.error.is_not(None))
               .values(error=jobs.c.failure_kind + ": " + jobs.c.error))
    op.execute(jobs.update().where(finished, jobs.c.error.is_(None)).values(error=jobs.c.failure_kind))
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("failure_kind")
        batch.drop_column("refused")
