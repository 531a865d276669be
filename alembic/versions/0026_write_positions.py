"""Where each caller's last write left the primary's log, for reads from a replica.

``write_positions`` holds one row per caller (the keystone user, a bearer token's
digest): the primary's WAL position after that caller's last write request.  Written
only while ``[database] slave_connection`` names a replica; a read goes to the
replica once it has replayed past the caller's position.

Revision ID: 0026_write_positions
Revises: 0025_close_handoff
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026_write_positions"
down_revision = "0025_close_handoff"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "write_positions",
        sa.Column("caller", sa.String(255), primary_key=True),
        sa.Column("position", sa.String(32), nullable=False),
        sa.Column("written_at", sa.DateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("write_positions")
