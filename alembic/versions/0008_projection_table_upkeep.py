"""Table upkeep of the ingest path's tables on PostgreSQL (SQLite: nothing to do).

- ``fillfactor``: the fold rewrites a resource's row and ends its open interval at
  almost every event; room left in each page lets PostgreSQL keep the new row
  version in the same page without touching the indexes (a HOT update) when no
  indexed column changed.  Applies to pages written from now on.
- per-table autovacuum thresholds: autovacuum analyses these tables after a few
  thousand changed rows instead of a tenth of the table, so the planner's
  statistics follow a fresh database's first flood within its next round
  (``autovacuum_naptime``, a minute by default) and not the request path.

Revision ID: 0008_projection_table_upkeep
Revises: 0007_sync_sightings
"""

from __future__ import annotations

from alembic import op

revision = "0008_projection_table_upkeep"
down_revision = "0007_sync_sightings"
branch_labels = None
depends_on = None

_ANALYZE = "autovacuum_analyze_threshold = 2000, autovacuum_analyze_scale_factor = 0.02"
SETTINGS = {
    "current_resources": f"fillfactor = 70, {_ANALYZE}, autovacuum_vacuum_scale_factor = 0.05",
    "resource_intervals": f"fillfactor = 85, {_ANALYZE}",
    "events": _ANALYZE,
}


def _names(settings: str) -> str:
    return ", ".join(part.split("=")[0].strip() for part in settings.split(","))


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, settings in SETTINGS.items():
        op.execute(f"ALTER TABLE {table} SET ({settings})")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, settings in SETTINGS.items():
        op.execute(f"ALTER TABLE {table} RESET ({_names(settings)})")
