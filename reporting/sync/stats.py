"""The shape of ``sync_runs.stats``: every run writes every key, whatever ended it."""

from __future__ import annotations

from typing import Any


def empty_stats() -> dict[str, Any]:
    """A run's stats before anything happened (``deletion_window`` None until read).

    ``restated``: the creates of ``created`` whose restatement at the poll was stored
    too (a ``sync.update`` beside the ``sync.create``, plan.Correction.restated).
    ``kind``: full, or incremental (``changed_since``: from when the changes were asked
    for; ``changed_types``: the types listed by change; an incremental run adds
    ``unchanged``, the resources of the types listed whole it did not diff)."""
    return {"created": 0, "restated": 0, "updated": 0, "deleted": 0,
            "deferred": {"transition": 0, "recent": 0},
            "errors": [], "error_count": 0, "enumerated_types": [],
            "deletion_window": None, "kind": "full", "changed_since": None,
            "changed_types": []}


def failed_stats(errors: list[str]) -> dict[str, Any]:
    """The stats of a run that ended with ``errors`` and did nothing else."""
    return {**empty_stats(), "errors": list(errors), "error_count": len(errors)}


def describe_deferred(value: object) -> str:
    """``stats.deferred`` in words: ``0``, or ``2 (recent 2)``; the API's log line and
    tally-sync's say it alike."""
    if not isinstance(value, dict):
        return str(value)
    total = sum(count for count in value.values() if isinstance(count, int))
    parts = ", ".join(f"{reason} {count}" for reason, count in sorted(value.items()) if count)
    return f"{total} ({parts})" if parts else str(total)
