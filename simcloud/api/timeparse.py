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
