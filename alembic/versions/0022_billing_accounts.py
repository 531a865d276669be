"""Billing accounts and their dated project memberships.

``billing_accounts`` holds the accounts an admin adds; ``account_memberships`` the
versioned memberships of a cloud's project in an account (never edited: a later row
moves the project from its instant on).

Revision ID: 0022_billing_accounts
Revises: 0021_close_acceptances
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022_billing_accounts"
down_revision = "0021_close_acceptances"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "billing_accounts",
        sa.Column("account_id", sa.String(255), primary_key=True),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
    )
    op.create_table(
        "account_memberships",
        sa.Column("cloud", sa.String(255), primary_key=True),
        sa.Column("project_id", sa.String(255), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True),
        sa.Column("account_id", sa.String(255), nullable=False),
        sa.Column("effective_from", sa.DateTime(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
    )
    op.create_index("ix_account_memberships_effective", "account_memberships",
                    ["cloud", "project_id", "effective_from"], unique=True)
    op.create_index("ix_account_memberships_account", "account_memberships", ["account_id"])


def downgrade() -> None:
    op.drop_index("ix_account_memberships_account", table_name="account_memberships")
    op.drop_index("ix_account_memberships_effective", table_name="account_memberships")
    op.drop_table("account_memberships")
    op.drop_table("billing_accounts")
