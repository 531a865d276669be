"""A closed period records the currency its close billed in.

The statement of a project without a line in a closed period is not stored (it is
empty); it was rendered with the currency of the price versions stored *now*, so a
version added after the close could change it from null to "EUR".  The close now
records the currency it used (``billing_periods.currency``, null when no version
priced the cloud), and that statement is rendered from it, byte for byte forever.

Periods closed before this revision get what their close used: every price list
shares one currency (a version in another is refused), and a cloud is priced by its
own list or ``default``, so it is the currency of a version of either created by the
close's instant, else null.

Revision ID: 0014_period_currency
Revises: 0013_billing_unbounded_money
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_period_currency"
down_revision = "0013_billing_unbounded_money"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("billing_periods") as batch:
        batch.add_column(sa.Column("currency", sa.String(3), nullable=True))
    op.execute(
        "UPDATE billing_periods SET currency = ("
        " SELECT v.currency FROM price_list_versions v"
        " WHERE v.name IN (billing_periods.cloud, 'default')"
        " AND v.created_at <= billing_periods.closed_at"
        " ORDER BY v.created_at LIMIT 1)"
    )


def downgrade() -> None:
    with op.batch_alter_table("billing_periods") as batch:
        batch.drop_column("currency")
