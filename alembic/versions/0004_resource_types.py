"""Registered size schemas, seeded with the OpenStack instance, volume, floating IP
and image schemas of docs/canonical-event.md.

The documents below are frozen copies: a migration must write what it wrote the day
it shipped, whatever ``mapping/size_schemas.py`` says later (a test compares the two
so a drift is a conscious decision).

Revision ID: 0004_resource_types
Revises: 0003_rejected_events
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0004_resource_types"
down_revision = "0003_rejected_events"
branch_labels = None
depends_on = None

_DRAFT = "https://json-schema.org/draft/2020-12/schema"

SEEDED: dict[str, dict[str, Any]] = {
    "instance": {
        "$schema": _DRAFT,
        "type": "object",
        "additionalProperties": False,
        "required": ["disk_gb", "flavor", "ram_gb", "vcpus"],
        "properties": {
            "vcpus": {"type": "integer", "minimum": 0},
            "ram_gb": {"type": "number", "minimum": 0},
            "disk_gb": {"type": "number", "minimum": 0},
            "flavor": {"type": "string", "maxLength": 255},
        },
    },
    "volume": {
        "$schema": _DRAFT,
        "type": "object",
        "additionalProperties": False,
        "required": ["size_gb", "type"],
        "properties": {
            "size_gb": {"type": "number", "minimum": 0},
            "type": {"type": "string", "maxLength": 255},
        },
    },
    "floating_ip": {
        "$schema": _DRAFT,
        "type": "object",
        "additionalProperties": False,
        "required": ["ip_version"],
        "properties": {"ip_version": {"enum": [4, 6]}},
    },
    "image": {
        "$schema": _DRAFT,
        "type": "object",
        "additionalProperties": False,
        "required": ["size_gb"],
        "properties": {"size_gb": {"type": "number", "minimum": 0}},
    },
}

resource_types = sa.table(
    "resource_types",
    sa.column("platform", sa.String),
    sa.column("resource_type", sa.String),
    sa.column("size_schema", sa.JSON),
    sa.column("updated_at", sa.DateTime),
)


def upgrade() -> None:
    op.create_table(
        "resource_types",
        sa.Column("platform", sa.String(64), nullable=False),
        sa.Column("resource_type", sa.String(64), nullable=False),
        sa.Column("size_schema", sa.JSON(), nullable=False),
        sa.Column("updated_at", sa.DateTime(), nullable=False),
        sa.PrimaryKeyConstraint("platform", "resource_type", name="pk_resource_types"),
    )
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    op.bulk_insert(
        resource_types,
        [
            {
                "platform": "openstack",
                "resource_type": name,
                "size_schema": schema,
                "updated_at": now,
            }
            for name, schema in SEEDED.items()
        ],
    )


def downgrade() -> None:
    op.drop_table("resource_types")
