"""A close notifies the invoicing system: the webhook outbox and its attempts.

``webhook_deliveries``: one row per notice, written in the close's own transaction
(a close that commits has its notice, a rolled-back one none), with the exact body
signed and posted, its status and the lease of the worker posting it;
``webhook_attempts``: every POST of a delivery, with the HTTP status or the error.

Revision ID: 0029_close_webhooks
Revises: 0028_manual_lines
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029_close_webhooks"
down_revision = "0028_manual_lines"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("period", sa.String(7), nullable=False),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("retry_from", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(), nullable=False),
        sa.Column("lease_until", sa.DateTime(), nullable=True),
        sa.Column("leased_by", sa.String(64), nullable=True),
        sa.Column("delivered_at", sa.DateTime(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_deliveries"),
    )
    op.create_index("ix_webhook_deliveries_due", "webhook_deliveries",
                    ["status", "next_attempt_at"])
    op.create_index("ix_webhook_deliveries_period", "webhook_deliveries", ["cloud", "period"])
    op.create_table(
        "webhook_attempts",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("delivery_id", _ID, nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("attempted_at", sa.DateTime(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_webhook_attempts"),
    )
    op.create_index("uq_webhook_attempts_delivery_number", "webhook_attempts",
                    ["delivery_id", "number"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_webhook_attempts_delivery_number", table_name="webhook_attempts")
    op.drop_table("webhook_attempts")
    op.drop_index("ix_webhook_deliveries_period", table_name="webhook_deliveries")
    op.drop_index("ix_webhook_deliveries_due", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
