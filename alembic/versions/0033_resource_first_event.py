"""``current_resources.first_event_at``: the instant of the resource's oldest event.

With ``last_event_at`` it bounds the resource's history: every event of the resource
is dated in ``[first_event_at, last_event_at]``, and every interval of its lifecycle
ends in it or is open.  The fold's reads by key (a late event's replay, the
resource's lifecycle and history) name that span, so PostgreSQL reads the monthly
partitions (migration 0032) it covers instead of probing every month held.

Filled from the events held; NULL where the resource has none left (a pruned
history): a NULL bound reads as before, unbounded below.

Revision ID: 0033_resource_first_event
Revises: 0032_history_partitions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033_resource_first_event"
down_revision = "0032_history_partitions"
branch_labels = None
depends_on = None

_KEY = ("platform", "cloud", "resource_type", "resource_id")


def upgrade() -> None:
    op.add_column("current_resources", sa.Column("first_event_at", sa.DateTime()))
    same = " AND ".join(f"e.{c} = r.{c}" for c in _KEY)
    if op.get_bind().dialect.name == "postgresql":
        # One pass over the events (a hash aggregate), not a probe per row.
        key = ", ".join(_KEY)
        op.execute(
            "UPDATE current_resources r SET first_event_at = e.first "  # noqa: S608 - our names
            f'FROM (SELECT {key}, min("timestamp") AS first FROM events GROUP BY {key}) e '
            f"WHERE {same}")
    else:
        op.execute(
            "UPDATE current_resources AS r SET first_event_at = ("  # noqa: S608 - our names
            f'SELECT min(e."timestamp") FROM events e WHERE {same})')


def downgrade() -> None:
    with op.batch_alter_table("current_resources") as batch:
        batch.drop_column("first_event_at")
