"""A minimum commitment per billing account and period.

``account_commitments``: per account, dated by ``effective_from`` (a month's start;
one per instant, the primary key), the minimum each period of the account bills in
``currency`` (with its minor units), who added it and when.  A later commitment
replaces it from its instant on; a minimum of zero ends it.  Rows are never edited
or removed.

Revision ID: 0030_account_commitments
Revises: 0029_close_webhooks
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030_account_commitments"
down_revision = "0029_close_webhooks"
branch_labels = None
depends_on = None

# Unbounded NUMERIC (as 0013 left every amount), decimal text on SQLite.
_MONEY = sa.Numeric().with_variant(sa.String(32), "sqlite")


def upgrade() -> None:
    op.create_table(
        "account_commitments",
        sa.Column("account_id", sa.String(255), primary_key=True),
        sa.Column("effective_from", sa.DateTime(), primary_key=True),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("minimum", _MONEY, nullable=False),
        sa.Column("minor_units", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("account_commitments")
