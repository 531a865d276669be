"""Credits and charges booked by hand on an account's period of a cloud.

``account_lines``: per account, numbered from 1, a credit or charge (a positive
amount and its kind) in the currency of the cloud's period, with its reason, the
instant it takes effect, who booked it and when; a reversal names the line it undoes
in ``reverses`` (unique per account: a line is reversed once).  Lines are never
edited or removed.

Revision ID: 0028_manual_lines
Revises: 0027_sync_run_kind
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028_manual_lines"
down_revision = "0027_sync_run_kind"
branch_labels = None
depends_on = None

# Unbounded NUMERIC (as 0013 left every amount), decimal text on SQLite.
_MONEY = sa.Numeric().with_variant(sa.String(32), "sqlite")


def upgrade() -> None:
    op.create_table(
        "account_lines",
        sa.Column("account_id", sa.String(255), primary_key=True),
        sa.Column("number", sa.Integer(), primary_key=True),
        sa.Column("cloud", sa.String(255), nullable=False),
        sa.Column("period", sa.String(7), nullable=False),
        sa.Column("project_id", sa.String(255), nullable=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("amount", _MONEY, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("minor_units", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("effective_at", sa.DateTime(), nullable=False),
        sa.Column("reverses", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(255), nullable=False),
    )
    op.create_index("ix_account_lines_period", "account_lines",
                    ["account_id", "cloud", "period"])
    op.create_index("ix_account_lines_reverses", "account_lines", ["account_id", "reverses"],
                    unique=True)


def downgrade() -> None:
    op.drop_index("ix_account_lines_reverses", table_name="account_lines")
    op.drop_index("ix_account_lines_period", table_name="account_lines")
    op.drop_table("account_lines")
