"""Closed statements are numbered per cloud.

``closed_statements.number``: 1, 2, … per cloud, gapless, given in the close's
transaction and never changed, for the invoicing system to cite.  Statements closed
before this revision are numbered here in close order (the period's ``closed_at``,
then the period, then the project), as a close numbers its own.

Revision ID: 0025_close_handoff
Revises: 0022_billing_accounts
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_close_handoff"
down_revision = "0022_billing_accounts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("closed_statements") as batch:
        batch.add_column(sa.Column("number", sa.BigInteger(), nullable=True))
    bind = op.get_bind()
    rows = bind.execute(sa.text(
        "SELECT s.cloud, s.period, s.project_id FROM closed_statements s "
        "JOIN billing_periods p ON p.cloud = s.cloud AND p.period = s.period "
        "ORDER BY s.cloud, p.closed_at, s.period, s.project_id")).all()
    numbers: dict[str, int] = {}
    updates = []
    for cloud, period, project_id in rows:
        numbers[cloud] = numbers.get(cloud, 0) + 1
        updates.append({"n": numbers[cloud], "c": cloud, "p": period, "j": project_id})
    if updates:
        bind.execute(sa.text(
            "UPDATE closed_statements SET number = :n "
            "WHERE cloud = :c AND period = :p AND project_id = :j"), updates)
    op.create_index("uq_closed_statements_cloud_number", "closed_statements",
                    ["cloud", "number"], unique=True)


def downgrade() -> None:
    op.drop_index("uq_closed_statements_cloud_number", table_name="closed_statements")
    with op.batch_alter_table("closed_statements") as batch:
        batch.drop_column("number")
