"""A sync run says which kind it was: full or incremental.

``sync_runs.kind``: ``full`` (every resource listed, the absence pass run) or
``incremental`` (only what changed since the last completed run; nothing deleted for
being absent; ``[sync] full_listing_interval_s``).  Runs recorded before this revision
were all full.

Revision ID: 0027_sync_run_kind
Revises: 0026_write_positions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027_sync_run_kind"
down_revision = "0026_write_positions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sync_runs") as batch:
        batch.add_column(sa.Column("kind", sa.String(16), nullable=False,
                                   server_default="full"))


def downgrade() -> None:
    with op.batch_alter_table("sync_runs") as batch:
        batch.drop_column("kind")
