"""Billing periods: calendar months in UTC named ``YYYY-MM``."""

from __future__ import annotations

import datetime as dt
import re

_PERIOD = re.compile(r"^([0-9]{4})-([0-9]{2})\Z")
# The last month whose end is still a datetime (9999-12 would end in year 10000).
LAST_YEAR = 9998


class PeriodError(ValueError):
    """Not a period name Tally accepts."""


def parse(name: object) -> tuple[dt.datetime, dt.datetime]:
    """``[start, end)`` of the month ``name`` (naive UTC); raises PeriodError."""
    match = _PERIOD.match(name) if isinstance(name, str) else None
    if match is None:
        raise PeriodError(f"period must be a month YYYY-MM, e.g. 2026-10 (got {name!r})")
    year, month = int(match[1]), int(match[2])
    if not 1 <= month <= 12 or not 1 <= year <= LAST_YEAR:
        raise PeriodError(f"period {name} is not a month between 0001-01 and {LAST_YEAR}-12")
    start = dt.datetime(year, month, 1)
    return start, _next_start(start)


def _next_start(start: dt.datetime) -> dt.datetime:
    return start.replace(year=start.year + 1, month=1) if start.month == 12 else start.replace(
        month=start.month + 1
    )


def name_of(start: dt.datetime) -> str:
    return f"{start.year:04d}-{start.month:02d}"


def following(name: str) -> str:
    """The name of the month after ``name``."""
    start, end = parse(name)
    return name_of(end)


def containing(moment: dt.datetime) -> str:
    return name_of(moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0))
