"""Seed the openstack/loadbalancer size schema, with its marker.

Upgrade inserts the document only where no openstack/loadbalancer row exists: an
operator who registered their own keeps it, and the upgrade succeeds either way.
Downgrade deletes the row only while it still holds exactly the document written
here, marker included; an edited document is the operator's and survives.

Revision ID: 0006_seed_loadbalancer_type
Revises: 0005_sync
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0006_seed_loadbalancer_type"
down_revision = "0005_sync"
branch_labels = None
depends_on = None

MARKER_KEY = "x-tally-seeded-by"

SEEDED: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "additionalProperties": False,
    "required": ["listeners", "pools"],
    "properties": {
        "listeners": {"type": "integer", "minimum": 0},
        "pools": {"type": "integer", "minimum": 0},
    },
    MARKER_KEY: "0006_seed_loadbalancer_type",
}

resource_types = sa.table(
    "resource_types",
    sa.column("platform", sa.String),
    sa.column("resource_type", sa.String),
    sa.column("size_schema", sa.JSON),
    sa.column("updated_at", sa.DateTime),
)

_THIS_ROW = sa.and_(
    resource_types.c.platform == "openstack",
    resource_types.c.resource_type == "loadbalancer",
)


def _existing() -> Any | None:
    row = op.get_bind().execute(
        sa.select(resource_types.c.size_schema).where(_THIS_ROW)
    ).first()
    return None if row is None else (row[0],)


def upgrade() -> None:
    if _existing() is not None:
        return  # the operator's own document stays
    op.execute(
        resource_types.insert().values(
            platform="openstack",
            resource_type="loadbalancer",
            size_schema=SEEDED,
            updated_at=dt.datetime.now(dt.UTC).replace(tzinfo=None),
        )
    )


def downgrade() -> None:
    existing = _existing()
    if existing is not None and existing[0] == SEEDED:
        op.execute(resource_types.delete().where(_THIS_ROW))
