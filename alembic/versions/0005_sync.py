"""Reconciliation bookkeeping: sync_runs, sync_locks and size_names.

Revision ID: 0005_sync
Revises: 0004_resource_types
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_sync"
down_revision = "0004_resource_types"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sync_runs",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", sa.DateTime(), nullable=False),
        sa.Column("completed_at", sa.DateTime(), nullable=True),
        sa.Column("stats", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sync_runs"),
    )
    op.create_index(
        "ix_sync_runs_cloud_status_started", "sync_runs", ["cloud", "status", "started_at"]
    )
    op.create_table(
        "sync_locks",
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("run_id", sa.String(36), nullable=False),
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("acquired_at", sa.DateTime(), nullable=False),
        sa.Column("expires_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("cloud", name="pk_sync_locks"),
    )
    op.create_table(
        "size_names",
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("kind", sa.String(64), nullable=False),
        sa.Column("size_id", sa.String(255), nullable=False),
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("platform", "cloud", "kind", "size_id", name="pk_size_names"),
    )


def downgrade() -> None:
    op.drop_table("size_names")
    op.drop_table("sync_locks")
    op.drop_index("ix_sync_runs_cloud_status_started", table_name="sync_runs")
    op.drop_table("sync_runs")
