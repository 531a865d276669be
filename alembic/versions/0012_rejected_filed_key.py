"""A key per item the collector files into the dead letter, so a retry files it once.

``POST /v1/rejected-events`` files what a collector parked on its disk (an event the
API refused on its own, a notification it could not map).  The collector sends the
same key on every retry of one parked item; the unique index makes the second filing
a ``duplicate`` of the first.  Rows ingest refused have none (NULL, not unique).

Revision ID: 0012_rejected_filed_key
Revises: 0011_fold_hot_fillfactor
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_rejected_filed_key"
down_revision = "0011_fold_hot_fillfactor"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("rejected_events") as batch:
        batch.add_column(sa.Column("filed_key", sa.String(255), nullable=True))
    op.create_index("uq_rejected_events_filed_key", "rejected_events", ["filed_key"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("uq_rejected_events_filed_key", table_name="rejected_events")
    with op.batch_alter_table("rejected_events") as batch:
        batch.drop_column("filed_key")
