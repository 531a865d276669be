"""The window of the deletion listing a run asks the platform for.

It opens at the newest ``started_at`` of the cloud's completed runs, less the
settle window (a deletion a run deferred happened before that run started): the
whole gap since the last completed run, however long an outage lasted, since nova
keeps its deleted servers listable until an operator archives them.  Only a gap
longer than ``[sync] deletion_window_max_days`` is clamped to that bound before the
run's instant; a clamped window is counted (``tally_sync_deletion_windows_clamped``)
and the deletes it left to the absence pass, dated at the poll, are counted in the
run's stats.  A cloud's first run has no window and asks for no deletions.  A run
told an instant behind the bound would ask for a window that has not happened yet;
it asks for the 24 hours behind its own instant instead.
"""

from __future__ import annotations

import dataclasses
import datetime as dt

BEHIND_BOUND = dt.timedelta(hours=24)


@dataclasses.dataclass(frozen=True)
class DeletionWindow:
    since: dt.datetime | None  # None: no deletion listing this run
    clamped: bool = False
    behind_bound: bool = False


def deletion_window(
    at: dt.datetime, bound: dt.datetime | None, settle: dt.timedelta,
    max_window: dt.timedelta,
) -> DeletionWindow:
    """``bound``: newest started_at of the cloud's completed runs (None: first run);
    ``max_window``: the longest window a run asks for."""
    if bound is None:
        return DeletionWindow(since=None)
    if bound > at:
        return DeletionWindow(since=at - min(BEHIND_BOUND, max_window), clamped=True,
                              behind_bound=True)
    since = bound - settle
    floor = at - max_window
    if since < floor:
        return DeletionWindow(since=floor, clamped=True)
    return DeletionWindow(since=since)
