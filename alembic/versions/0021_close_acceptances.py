"""A closed period records what its close accepted explicitly.

A close now refuses a period with unrated lines, or whose cloud's history began
inside it, unless the admin accepts it; ``billing_periods.accepted_unrated_lines``
and ``accepted_partial_history_from`` record what was accepted (by ``closed_by``).
Periods closed before this revision accepted nothing explicitly: NULL.

Revision ID: 0021_close_acceptances
Revises: 0020_period_minor_units
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_close_acceptances"
down_revision = "0020_period_minor_units"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("billing_periods") as batch:
        batch.add_column(sa.Column("accepted_unrated_lines", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("accepted_partial_history_from", sa.DateTime(),
                                   nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("billing_periods") as batch:
        batch.drop_column("accepted_partial_history_from")
        batch.drop_column("accepted_unrated_lines")
