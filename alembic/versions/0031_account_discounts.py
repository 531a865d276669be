"""A dated percentage discount per billing account.

``account_discounts``: per account, dated by ``effective_from`` (a month's start; one
per instant, the primary key), the percent (0 to 100, hundredths) each period of the
account is discounted by on its usage, the reason, who added it and when.  A later
discount replaces it from its instant on; a percent of zero ends it.  Rows are never
edited or removed.

Revision ID: 0031_account_discounts
Revises: 0030_account_commitments
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031_account_discounts"
down_revision = "0030_account_commitments"
branch_labels = None
depends_on = None

# Unbounded NUMERIC (as every amount), decimal text on SQLite.
_EXACT = sa.Numeric().with_variant(sa.String(32), "sqlite")


def upgrade() -> None:
    op.create_table(
        "account_discounts",
        sa.Column("account_id", sa.String(255), primary_key=True),
        sa.Column("effective_from", sa.DateTime(), primary_key=True),
        sa.Column("percent", _EXACT, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("account_discounts")
