"""Indexes the fold probes key by key, whatever the planner statistics say.

The fold reads each resource of a batch by its id alone
(``reporting/db/writes/pg_lookup.py``): the key's other columns are checked above an
``OFFSET 0`` fence, so the only index the planner can use is one that leads with
``resource_id``.  With the whole key as index conditions, a database without
statistics (fresh, autovacuum off or not yet come round) or with the statistics of a
trickle lets the planner prefer any index leading with ``cloud`` (``(cloud, type,
live)``, ``(cloud, start)``, ``(cloud, received_at)``), reading every row of the cloud
once per batch or even once per key.

- ``ix_events_resource_order`` and ``ix_resource_intervals_resource`` lead with
  ``resource_id`` (the same columns; every query reads them with the whole key);
- ``current_resources`` gets ``ix_current_resources_resource_id``, and
  ``(cloud, resource_type, live)`` becomes ``(cloud, resource_type, platform,
  resource_id)``: the inventory of a cloud and type in key order, and no index holds
  ``live`` any more, so a delete's row rewrite can be HOT too.

Both rebuilt indexes are built in the migration's transaction, writes to the table
waiting meanwhile: on a large database, upgrade in a quiet hour.

Revision ID: 0017_fold_probe_indexes
Revises: 0016_ingest_sequences
"""

from __future__ import annotations

from alembic import op

revision = "0017_fold_probe_indexes"
down_revision = "0016_ingest_sequences"
branch_labels = None
depends_on = None

# (index, table, columns before, columns after)
REBUILT = [
    ("ix_events_resource_order", "events",
     ["platform", "cloud", "resource_type", "resource_id", "timestamp", "seq"],
     ["resource_id", "timestamp", "seq", "platform", "cloud", "resource_type"]),
    ("ix_resource_intervals_resource", "resource_intervals",
     ["platform", "cloud", "resource_type", "resource_id", "start"],
     ["resource_id", "start", "platform", "cloud", "resource_type"]),
]
OLD_INVENTORY = ("ix_current_resources_cloud_type_live", ["cloud", "resource_type", "live"])
NEW_INVENTORY = ("ix_current_resources_cloud_type_key",
                 ["cloud", "resource_type", "platform", "resource_id"])
PROBE = ("ix_current_resources_resource_id", ["resource_id"])


def upgrade() -> None:
    for name, table, _before, after in REBUILT:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, after)
    op.drop_index(OLD_INVENTORY[0], table_name="current_resources")
    op.create_index(NEW_INVENTORY[0], "current_resources", NEW_INVENTORY[1])
    op.create_index(PROBE[0], "current_resources", PROBE[1])


def downgrade() -> None:
    op.drop_index(PROBE[0], table_name="current_resources")
    op.drop_index(NEW_INVENTORY[0], table_name="current_resources")
    op.create_index(OLD_INVENTORY[0], "current_resources", OLD_INVENTORY[1])
    for name, table, before, _after in REBUILT:
        op.drop_index(name, table_name=table)
        op.create_index(name, table, before)
