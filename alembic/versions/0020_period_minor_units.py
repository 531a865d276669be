"""A closed period records the minor units its amounts were rounded to.

Amounts are now rounded to the currency's ISO 4217 minor units (JPY to the yen, KWD
to the fils) where every currency was rounded to hundredths.  A frozen line is
rounded when it is rendered, so a closed period must keep the rounding of its close:
``billing_periods.minor_units``.  Every period closed before this revision was
rounded to hundredths, whatever its currency, and gets 2; its stored totals and texts
are hundredths too, and its lines keep rendering as they did.

Revision ID: 0020_period_minor_units
Revises: 0017_fold_probe_indexes
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_period_minor_units"
down_revision = "0017_fold_probe_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("billing_periods") as batch:
        batch.add_column(sa.Column("minor_units", sa.Integer(), nullable=True))
    op.execute("UPDATE billing_periods SET minor_units = 2")
    with op.batch_alter_table("billing_periods") as batch:
        batch.alter_column("minor_units", existing_type=sa.Integer(), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("billing_periods") as batch:
        batch.drop_column("minor_units")
