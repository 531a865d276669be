"""Closes freeze their lines as columns; late facts found through an index.

- ``closed_statements`` gains the frozen lines (one list entry per line) and
  ``lines_at``, where they go in ``body``, which a close now stores without them;
  ``closed_kinds`` holds how each (version, type, state, size) of a closed period
  was priced.  A close computes all of it set-based in the database
  (``reporting.billing.sql_close``).  Rows frozen before keep their whole text
  (``lines_at`` NULL) and are served as stored, and their per-resource amounts
  (``closed_resource_amounts``, which later closes no longer write: the frozen lines
  are their base) are found by resource (``ix_closed_resource_amounts_resource``).
- ``ix_events_cloud_month_seq``: the events of a cloud dated in a month, by receipt
  number, so the late facts of closed periods cost one index range per month of
  history plus the late facts themselves (``reporting.billing.adjustments``).

The downgrade refuses while a statement is frozen as lines (the older schema has no
place for them).

Revision ID: 0015_frozen_lines_late_facts
Revises: 0014_period_currency
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_frozen_lines_late_facts"
down_revision = "0014_period_currency"
branch_labels = None
depends_on = None

# The month of an event's timestamp, as the write seam's ``month_of`` spells it.
_MONTH = {"postgresql": "date_trunc('month', \"timestamp\")", "sqlite": 'substr("timestamp", 1, 7)'}
_LINES = ("line_resource_ids", "line_starts", "line_lengths", "line_event_ids", "line_kinds")


def _list_of(item: sa.types.TypeEngine) -> sa.types.TypeEngine:
    return sa.ARRAY(item).with_variant(sa.JSON(), "sqlite")


def upgrade() -> None:
    month = _MONTH[op.get_bind().dialect.name]
    op.execute(f"CREATE INDEX ix_events_cloud_month_seq ON events (cloud, {month}, seq)")
    op.create_index("ix_closed_resource_amounts_resource", "closed_resource_amounts",
                    ["cloud", "period", "resource_type", "resource_id"])
    with op.batch_alter_table("closed_statements") as batch:
        batch.add_column(sa.Column("lines_at", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("line_resource_ids", _list_of(sa.Text()), nullable=True))
        batch.add_column(sa.Column("line_starts", _list_of(sa.BigInteger()), nullable=True))
        batch.add_column(sa.Column("line_lengths", _list_of(sa.BigInteger()), nullable=True))
        batch.add_column(sa.Column("line_event_ids", _list_of(sa.Text()), nullable=True))
        batch.add_column(sa.Column("line_kinds", _list_of(sa.Integer()), nullable=True))
    op.create_table(
        "closed_kinds",
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("period", sa.String(7), nullable=False),
        sa.Column("kind", sa.Integer(), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("state", sa.String(255), nullable=True),
        sa.Column("size", sa.Text(), nullable=False),
        sa.Column("price_list_version", sa.String(255), nullable=True),
        sa.Column("unit", sa.String(16), nullable=True),
        sa.Column("rate", sa.Text(), nullable=True),
        sa.Column("modifier", sa.Text(), nullable=True),
        sa.Column("factor", sa.Text(), nullable=True),
        sa.Column("per_hour", sa.Text(), nullable=True),
        sa.Column("unrated", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("cloud", "period", "kind", name="pk_closed_kinds"),
    )


def downgrade() -> None:
    frozen = op.get_bind().execute(
        sa.text("SELECT count(*) FROM closed_statements WHERE lines_at IS NOT NULL")).scalar()
    if frozen:
        raise RuntimeError(
            f"{frozen} closed statements are frozen as lines, which revision "
            "0014_period_currency cannot hold; a downgrade would lose them")
    op.drop_table("closed_kinds")
    with op.batch_alter_table("closed_statements") as batch:
        batch.drop_column("lines_at")
        for column in _LINES:
            batch.drop_column(column)
    op.drop_index("ix_closed_resource_amounts_resource", table_name="closed_resource_amounts")
    op.drop_index("ix_events_cloud_month_seq", table_name="events")
