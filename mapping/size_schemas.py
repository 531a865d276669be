"""The size schemas Tally seeds for OpenStack resource types (docs/canonical-event.md).

Every listed member is required and extra members are refused.  The migrations
register copies of these documents; the copies in the migrations are frozen, these
are the reference the tests compare them with.
"""

from __future__ import annotations

from typing import Any, Final

LOADBALANCER_SEED_MARKER_KEY: Final = "x-tally-seeded-by"
LOADBALANCER_SEED_MARKER: Final = "0006_seed_loadbalancer_type"


def _closed(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "required": sorted(properties),
        "properties": properties,
    }


SEEDED_SIZE_SCHEMAS: Final[dict[str, dict[str, Any]]] = {
    "instance": _closed({
        "vcpus": {"type": "integer", "minimum": 0},
        "ram_gb": {"type": "number", "minimum": 0},
        "disk_gb": {"type": "number", "minimum": 0},
        "flavor": {"type": "string", "maxLength": 255},
    }),
    "volume": _closed({
        "size_gb": {"type": "number", "minimum": 0},
        "type": {"type": "string", "maxLength": 255},
    }),
    "floating_ip": _closed({
        "ip_version": {"enum": [4, 6]},
    }),
    "image": _closed({
        "size_gb": {"type": "number", "minimum": 0},
    }),
    "loadbalancer": {
        **_closed({
            "listeners": {"type": "integer", "minimum": 0},
            "pools": {"type": "integer", "minimum": 0},
        }),
        LOADBALANCER_SEED_MARKER_KEY: LOADBALANCER_SEED_MARKER,
    },
}
