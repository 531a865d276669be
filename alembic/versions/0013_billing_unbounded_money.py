"""Billing amounts in unbounded NUMERIC (PostgreSQL): an amount is never capped.

``NUMERIC(18,2)`` held at most 16 digits before the point, while a valid price list
(rates and modifiers of up to 12 digits each side of the point, any size) can bill
more: the close then failed on "numeric field overflow".  Unbounded ``NUMERIC`` holds
any amount exactly; the values are the same cents.  Dropping the bound rewrites no
row.  SQLite keeps decimal text and enforces no length: nothing to change there.

The downgrade restores ``NUMERIC(18,2)`` and refuses (changing nothing) while a stored
amount would not fit it.

Revision ID: 0013_billing_unbounded_money
Revises: 0012_rejected_filed_key
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_billing_unbounded_money"
down_revision = "0012_rejected_filed_key"
branch_labels = None
depends_on = None

COLUMNS = {
    "closed_statements": ("subtotal", "adjustments_total", "total"),
    "closed_resource_amounts": ("amount",),
    "billing_adjustments": ("amount",),
}
# The largest magnitude NUMERIC(18,2) holds is below 10^16.
BOUND = 10**16


def _alter(kind: str) -> None:
    for table, columns in COLUMNS.items():
        changes = ", ".join(f"ALTER COLUMN {c} TYPE {kind}" for c in columns)
        op.execute(f"ALTER TABLE {table} {changes}")


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    _alter("NUMERIC")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for table, columns in COLUMNS.items():
        wide = " OR ".join(f"abs({c}) >= {BOUND}" for c in columns)
        # Only the constant names above are interpolated.
        query = sa.text(f"SELECT count(*) FROM {table} WHERE {wide}")  # noqa: S608
        count = bind.execute(query).scalar_one()
        if count:
            raise RuntimeError(
                f"cannot downgrade below 0013_billing_unbounded_money: {count} row(s) of "
                f"{table} hold an amount of 10^16 or more, which NUMERIC(18,2) cannot "
                "store; nothing was changed")
    _alter("NUMERIC(18,2)")
