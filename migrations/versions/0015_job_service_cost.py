"""Jobs keep what their task cost at the service (`creditsIncrement`), so an operator can compare it with prices.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    """Add jobs.service_cost (empty until a finished task reports it)."""
    with op.batch_alter_table("jobs") as batch:
        batch.add_column(sa.Column("service_cost", sa.Integer(), nullable=True))


def downgrade() -> None:
    """Drop the column."""
    with op.batch_alter_table("jobs") as batch:
        batch.drop_column("service_cost")
