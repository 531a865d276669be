"""Whether a told instant can be a run's instant on a simulated cloud's own clock.

A run told an instant books what it observes at that instant and becomes the run
list's newest; a run told an instant its cloud has not reached (``--at 2027-06-01``
against a month that stands at 2026-11-01) would top the list for ever and open the
next run's deletion window from the future.  A wall-clock cloud's clock is the API's;
a simulated cloud's is its own, readable where its clouds-file entry names it
(``clock_url``: tally-simcloud's ``GET /_sim/clock`` answers ``{"at", "start", ...}``).
An instant after that clock, or before its month's ``start``, is refused; an earlier
instant of the month is a late run, allowed (docs/reconciliation.md).
"""

from __future__ import annotations

import datetime as dt

import requests

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting.sync.clouds import CloudEntry
from tally_common.api_url import describe_request_error

CLOCK_TIMEOUT_S = 10.0


class ToldInstantRefused(ValueError):
    """The told instant cannot be the cloud's; the message names both clocks."""


class ClockUnreadable(RuntimeError):
    """The simulated cloud's clock did not answer with an instant."""


def _utc(moment: dt.datetime) -> dt.datetime:
    return moment.replace(tzinfo=dt.UTC) if moment.tzinfo is None else moment.astimezone(dt.UTC)


def read_clock(url: str, timeout: float = CLOCK_TIMEOUT_S
               ) -> tuple[dt.datetime, dt.datetime | None]:
    """(now, the month's start or None) of the clock document at ``url``."""
    try:
        response = requests.get(url, timeout=timeout)
    except requests.RequestException as exc:
        raise ClockUnreadable(
            f"{url}: {describe_request_error(exc, url, 'the simulated cloud')}") from None
    try:
        document = response.json() if response.status_code == 200 else None
        if not isinstance(document, dict):
            raise ValueError
        now = parse_timestamp(document["at"])
        start = parse_timestamp(document["start"]) if "start" in document else None
    except (ValueError, KeyError, TypeError, TimestampError):
        raise ClockUnreadable(f"{url} answered HTTP {response.status_code} without a clock "
                              '{"at": <RFC 3339>}') from None
    return now, start


def check_told_instant(entry: CloudEntry, at: dt.datetime,
                       timeout: float = CLOCK_TIMEOUT_S) -> None:
    """Refuse ``at`` (naive UTC or aware) outside ``entry``'s simulated clock.

    Nothing to check for a wall-clock cloud or a simulated one without ``clock_url``.
    Raises ToldInstantRefused, or ClockUnreadable when the clock does not answer."""
    if entry.clock != "simulated" or not entry.clock_url:
        return
    now, start = read_clock(entry.clock_url, timeout)
    told = _utc(at)
    if told > now:
        raise ToldInstantRefused(
            f"{format_timestamp(told)} is after the simulated clock of cloud {entry.name!r}, "
            f"which stands at {format_timestamp(now)} (GET {entry.clock_url}): a run cannot "
            f"observe an instant its cloud has not reached; tell it {format_timestamp(now)} "
            "or earlier (move the clock first to sync later)")
    if start is not None and told < start:
        raise ToldInstantRefused(
            f"{format_timestamp(told)} is before the simulated month of cloud {entry.name!r}, "
            f"which starts at {format_timestamp(start)} (GET {entry.clock_url})")
