"""ISO 8601 query parameters as the OpenStack APIs accept them."""

from __future__ import annotations

import datetime as dt


def parse_iso8601(raw: str) -> float | None:
    """POSIX seconds of an ISO 8601 instant (naive means UTC), None when unparseable."""
    text = raw.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.timestamp()


# cinder (from 3.60) and glance: ``created_at=gte:2026-01-01T00:00:00Z`` and the like.
_OPERATORS = {
    "gt": lambda value, bound: value > bound,
    "gte": lambda value, bound: value >= bound,
    "eq": lambda value, bound: value == bound,
    "neq": lambda value, bound: value != bound,
    "lt": lambda value, bound: value < bound,
    "lte": lambda value, bound: value <= bound,
}


def time_comparison(raw: str) -> tuple[str, float] | None:
    """``(operator, POSIX seconds)`` of an ``OP:INSTANT`` filter, None when malformed."""
    operator, sep, instant = raw.partition(":")
    if not sep or operator not in _OPERATORS:
        return None
    bound = parse_iso8601(instant)
    return None if bound is None else (operator, bound)


def compares(value: float | None, comparison: tuple[str, float]) -> bool:
    """Whether ``value`` passes ``comparison``; a null (cinder's updated_at before a
    volume first changes) passes none, as the database's NULL comparison."""
    if value is None:
        return False
    operator, bound = comparison
    return bool(_OPERATORS[operator](value, bound))
