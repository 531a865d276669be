"""The projection: current_resources and the materialised lifecycle.

Revision ID: 0002_projection
Revises: 0001_events
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_projection"
down_revision = "0001_events"
branch_labels = None
depends_on = None

BIG_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "current_resources",
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("state", sa.String(255), nullable=True),
        sa.Column("size", sa.JSON(), nullable=True),
        sa.Column("live", sa.Boolean(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=True),
        sa.Column("deleted_at", sa.DateTime(), nullable=True),
        sa.Column("last_event_at", sa.DateTime(), nullable=False),
        sa.Column("last_event_id", sa.String(255), nullable=False),
        sa.Column("last_event_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint(
            "platform", "cloud", "resource_type", "resource_id", name="pk_current_resources"
        ),
    )
    op.create_index(
        "ix_current_resources_cloud_type_live",
        "current_resources",
        ["cloud", "resource_type", "live"],
    )
    op.create_index("ix_current_resources_project", "current_resources", ["project_id"])

    op.create_table(
        "resource_intervals",
        sa.Column("id", BIG_ID, primary_key=True, autoincrement=True),
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("start", sa.DateTime(), nullable=False),
        sa.Column("end", sa.DateTime(), nullable=True),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("state", sa.String(255), nullable=True),
        sa.Column("size", sa.JSON(), nullable=True),
        sa.Column("event_id", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_resource_intervals"),
    )
    op.create_index(
        "ix_resource_intervals_resource",
        "resource_intervals",
        ["platform", "cloud", "resource_type", "resource_id", "start"],
    )
    op.create_index(
        "ix_resource_intervals_cloud_start", "resource_intervals", ["cloud", "start"]
    )
    op.create_index(
        "ix_resource_intervals_project_start", "resource_intervals", ["project_id", "start"]
    )


def downgrade() -> None:
    op.drop_index("ix_resource_intervals_project_start", table_name="resource_intervals")
    op.drop_index("ix_resource_intervals_cloud_start", table_name="resource_intervals")
    op.drop_index("ix_resource_intervals_resource", table_name="resource_intervals")
    op.drop_table("resource_intervals")
    op.drop_index("ix_current_resources_project", table_name="current_resources")
    op.drop_index("ix_current_resources_cloud_type_live", table_name="current_resources")
    op.drop_table("current_resources")
