"""Now, in the form every instant takes in the database: naive UTC."""

from __future__ import annotations

import datetime as dt


def utcnow() -> dt.datetime:
    """Now as naive UTC (the columns hold UTC without an offset)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)
