"""The window of the deletion listing a run asks the platform for.

It opens at the newest ``started_at`` of the cloud's completed runs, less the
settle window (a deletion a run deferred happened before that run started), and
is clamped to the 24 hours before the run's instant, so the work of one run does
not grow with an outage.  A cloud's first run has no window and asks for no
deletions.  A run told an instant behind that bound would ask for a window that has
not happened yet; it asks for the whole 24 hours behind its own instant instead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

CLAMP = dt.timedelta(hours=24)


@dataclasses.dataclass(frozen=True)
class DeletionWindow:
    since: dt.datetime | None  # None: no deletion listing this run
    clamped: bool = False
    behind_bound: bool = False


def deletion_window(
    at: dt.datetime, bound: dt.datetime | None, settle: dt.timedelta
) -> DeletionWindow:
    """``bound``: newest started_at of the cloud's completed runs (None: first run)."""
    if bound is None:
        return DeletionWindow(since=None)
    floor = at - CLAMP
    if bound > at:
        return DeletionWindow(since=floor, clamped=True, behind_bound=True)
    since = bound - settle
    if since < floor:
        return DeletionWindow(since=floor, clamped=True)
    return DeletionWindow(since=since)
