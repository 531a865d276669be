"""Bounded ``cloud`` label values of the ingest metrics.

Every distinct label value is a permanent series in every worker's metrics, so a
refused item must not add one per junk cloud string it carries.  A cloud is a label
value once it is known: the clouds file names it, or this process stored an event of
it (the history then holds it).  Anything else counts under ``cloud=""``, beside the
items without a readable cloud.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_stored: set[str] = set()


def note_stored(clouds: set[str]) -> None:
    with _lock:
        _stored.update(clouds)


def cloud_label(cloud: str, known_clouds: frozenset[str] | None) -> str:
    if known_clouds is not None and cloud in known_clouds:
        return cloud
    with _lock:
        return cloud if cloud in _stored else ""
