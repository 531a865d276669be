"""The dead letter keeps each refused item losslessly.

``raw`` (JSON) cannot hold a NUL or a lone surrogate on PostgreSQL, so the copy kept
there has them replaced.  ``raw_json`` holds the item as ASCII JSON text (every
character outside ASCII escaped), which any text column stores exactly; the listing
and replay read it.  Rows filed before this revision have none.

Revision ID: 0009_rejected_raw_json
Revises: 0008_projection_table_upkeep
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_rejected_raw_json"
down_revision = "0008_projection_table_upkeep"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("rejected_events") as batch:
        batch.add_column(sa.Column("raw_json", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("rejected_events") as batch:
        batch.drop_column("raw_json")
