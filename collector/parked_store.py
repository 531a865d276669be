"""The parked store (``<buffer_dir>/parked``): what the collector could neither buffer
nor deliver, each item with its reason, until the Reporting API's dead letter has it.

A diskcache ``Cache`` used as a FIFO like the buffer.  diskcache keeps everything in
one SQLite database whose transactions serialise writers across processes, so the
running collector (parking, forwarding, requeueing) and ``python -m collector.parked``
(listing, marking for requeue) use it at once; only the buffer itself has a single
owner.  Each record is a JSON object:

- ``parked_id``: the item's key in the API's dead letter, drawn when it is parked, so
  every retry of its filing names the same item;
- ``reason``;
- ``event`` (the JSON text of an event the API refused on its own), or
  ``notification`` (what the listener could not buffer: the notification without its
  context credentials, or ``{"event_type", "event"}`` for an event whose buffer write
  kept failing);
- ``requeue``: true once an operator asked for the event to go back into the buffer.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Any

import diskcache

_SYNCHRONOUS = {"normal": 1, "full": 2}
# Keep every value inside SQLite: a side file would not be part of the transaction.
_MAX_INLINE_BYTES = 2**30
# Keys of items parked before records carried a parked_id (derived, so stable).
_LEGACY_IDS = uuid.UUID("9c1e0f5a-2b8d-4c43-a6f2-5d0f7e3b1a44")


def open_cache(directory: str, sync: str | None) -> diskcache.Cache:
    """A diskcache store as the buffer and the parked store use it: nothing evicted,
    every value in the SQLite row, commits as durable as ``sync`` says (None: as the
    store's owner last set it; diskcache keeps its settings in the database)."""
    settings: dict[str, Any] = {"eviction_policy": "none", "statistics": False,
                                "disk_min_file_size": _MAX_INLINE_BYTES}
    if sync is not None:
        settings["sqlite_synchronous"] = _SYNCHRONOUS[sync]
    return diskcache.Cache(directory, timeout=60, **settings)


def parked_event(record: dict[str, Any]) -> str | None:
    """The event JSON a parked record holds, or None for a raw notification."""
    if isinstance(record.get("event"), str):
        return str(record["event"])
    notification = record.get("notification")
    if isinstance(notification, dict) and isinstance(notification.get("event"), str):
        return str(notification["event"])
    return None


@dataclass(frozen=True)
class ParkedItem:
    key: int
    value: str  # the stored text: a conditional drop compares it
    stored_at: float
    record: dict[str, Any]

    @property
    def parked_id(self) -> str:
        found = self.record.get("parked_id")
        if isinstance(found, str) and found:
            return found
        return uuid.uuid5(_LEGACY_IDS, f"{self.stored_at!r}:{self.key}:{self.value}").hex

    @property
    def event(self) -> str | None:
        return parked_event(self.record)

    @property
    def raw(self) -> str:
        """The item's text as the dead letter keeps it: the event's JSON, or the
        notification as parked (a NaN stays ``NaN``, which is why it is text)."""
        event = self.event
        if event is not None:
            return event
        return json.dumps(self.record.get("notification"), default=repr, sort_keys=True)

    @property
    def reason(self) -> str:
        return str(self.record.get("reason") or "parked without a reason")

    @property
    def requeue_requested(self) -> bool:
        return self.record.get("requeue") is True


class ParkedStore:
    def __init__(self, directory: str, sync: str | None = "full") -> None:
        self._cache = open_cache(directory, sync)

    def park(self, record: dict[str, Any]) -> None:
        """Keep something that cannot be buffered or delivered, with its reason."""
        record = {"parked_id": uuid.uuid4().hex, **record}
        self._cache.push(json.dumps(record, default=repr, sort_keys=True), tag=time.time())

    def __len__(self) -> int:
        return len(self._cache)

    def items(self, skip: Collection[int] = ()) -> Iterator[ParkedItem]:
        """Everything parked, oldest first, but the keys in ``skip``; read as it goes."""
        for key in self._cache.iterkeys():
            if key in skip:
                continue
            value, stored_at = self._cache.get(key, tag=True)
            if value is not None:
                yield ParkedItem(key, value, float(stored_at or 0.0), json.loads(value))

    def drop(self, key: int) -> None:
        self._cache.delete(key)

    def drop_unchanged(self, item: ParkedItem) -> bool:
        """Drop ``item`` unless its record changed since it was read (an operator marked
        it for requeue meanwhile: the mark is then honoured instead)."""
        with self._cache.transact():
            if self._cache.get(item.key) != item.value:
                return False
            self._cache.delete(item.key)
        return True

    def mark_requeue(self, item: ParkedItem) -> bool:
        """Ask the running collector to put ``item``'s event back into the buffer; False
        when it is gone already (filed in the dead letter meanwhile) or holds no event."""
        if item.event is None:
            return False
        with self._cache.transact():
            value = self._cache.get(item.key)
            if value is None:
                return False
            record = json.loads(value)
            if record.get("requeue") is not True:
                record["requeue"] = True
                self._cache.set(item.key, json.dumps(record, default=repr, sort_keys=True),
                                tag=item.stored_at)
        return True

    def close(self) -> None:
        self._cache.close()
