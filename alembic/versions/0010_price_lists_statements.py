"""Billing: price list versions, closed periods, frozen statements, adjustments.

Revision ID: 0010_price_lists_statements
Revises: 0009_rejected_raw_json
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_price_lists_statements"
down_revision = "0009_rejected_raw_json"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
# NUMERIC on PostgreSQL; decimal text on SQLite, whose NUMERIC affinity keeps floats.
_MONEY = sa.Numeric(18, 2).with_variant(sa.String(32), "sqlite")


def upgrade() -> None:
    op.create_table(
        "price_list_versions",
        sa.Column("name", sa.String(255), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("effective_from", sa.DateTime(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("document", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
        sa.PrimaryKeyConstraint("name", "number", name="pk_price_list_versions"),
    )
    op.create_index("ix_price_list_versions_effective", "price_list_versions",
                    ["name", "effective_from"], unique=True)
    op.create_table(
        "billing_periods",
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("period", sa.String(7), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("closed_at", sa.DateTime(), nullable=False),
        sa.Column("closed_by", sa.String(255), nullable=False),
        sa.Column("cutoff_seq", sa.BigInteger(), nullable=False),
        sa.Column("cutoff_received_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("cloud", "period", name="pk_billing_periods"),
    )
    op.create_table(
        "closed_statements",
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("period", sa.String(7), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("subtotal", _MONEY, nullable=False),
        sa.Column("adjustments_total", _MONEY, nullable=False),
        sa.Column("total", _MONEY, nullable=False),
        sa.Column("unrated_lines", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("cloud", "period", "project_id", name="pk_closed_statements"),
    )
    op.create_table(
        "closed_resource_amounts",
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("period", sa.String(7), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("amount", _MONEY, nullable=False),
        sa.PrimaryKeyConstraint("cloud", "period", "project_id", "resource_type", "resource_id",
                                name="pk_closed_resource_amounts"),
    )
    op.create_table(
        "billing_adjustments",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("period", sa.String(7), nullable=False),
        sa.Column("source_period", sa.String(7), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("resource_id", sa.String(255), nullable=False),
        sa.Column("amount", _MONEY, nullable=False),
        sa.Column("event_ids", sa.JSON(), nullable=False),
        sa.Column("cutoff_seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_billing_adjustments"),
    )
    op.create_index("ix_billing_adjustments_source", "billing_adjustments",
                    ["cloud", "source_period", "resource_type", "resource_id"])
    op.create_index("ix_billing_adjustments_period", "billing_adjustments",
                    ["cloud", "period", "project_id"])


def downgrade() -> None:
    op.drop_index("ix_billing_adjustments_period", table_name="billing_adjustments")
    op.drop_index("ix_billing_adjustments_source", table_name="billing_adjustments")
    op.drop_table("billing_adjustments")
    op.drop_table("closed_resource_amounts")
    op.drop_table("closed_statements")
    op.drop_table("billing_periods")
    op.drop_index("ix_price_list_versions_effective", table_name="price_list_versions")
    op.drop_table("price_list_versions")
