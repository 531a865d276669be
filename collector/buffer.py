"""The collector's disk buffer: mapped events waiting for the Reporting API.

A diskcache ``Cache`` used as a FIFO queue (``push`` gives increasing integer
keys).  One item holds the events of one listener batch, written in one SQLite
transaction that is committed before ``append`` returns; with ``buffer_sync =
full`` (the default) the commit is also fsynced, so an event the listener
acknowledged survives ``kill -9`` and a power cut.

An item is the batch's canonical events as JSON texts joined by newlines (JSON
never contains a raw newline), kept in the SQLite row (never a side file) and
tagged with the instant it was buffered, which gives the oldest event's age.
Delivery settles events one by one: an item loses the events the Reporting API
answered for and disappears when none is left.  Nothing is ever evicted:
diskcache's eviction is off and the size limit is enforced by the listener
holding back acknowledgements.

Items that cannot be delivered at all (see ``collector.delivery``) and
notifications that cannot be buffered are moved to a second store, ``parked/``
beside the buffer, with the reason (``collector.parked_store``): kept on disk until
the Reporting API's dead letter has them (``collector.forward``), never dropped.

One collector owns a buffer directory (a lock file enforces it): the event count
is kept in memory after one scan at start.  The parked store has no such owner.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any

from oslo_config import cfg

from collector.errors import ConfigurationError
from collector.parked_store import ParkedStore, open_cache

OPTS = [
    cfg.StrOpt(
        "buffer_dir",
        help="Directory of the disk buffer (created if missing). Required. Events "
        "wait here until the Reporting API has answered for them; it survives "
        "crashes and restarts, so keep it on persistent storage.",
    ),
    cfg.IntOpt(
        "buffer_max_items",
        default=1_000_000,
        min=1,
        help="Buffer size limit in events. At the limit the listener stops "
        "acknowledging notifications (they wait in RabbitMQ) instead of dropping "
        "anything.",
    ),
    cfg.StrOpt(
        "buffer_sync",
        default="full",
        choices=[
            ("full", "fsync every commit: survives process crashes and power loss"),
            ("normal", "survives process crashes; a power cut may lose the last commits"),
        ],
        help="SQLite synchronous mode of the buffer.",
    ),
]

_SEPARATOR = "\n"


@dataclass(frozen=True)
class BufferedEvent:
    """One buffered event: the item holding it, its position there, its JSON text."""

    item: int
    position: int
    value: str


def _events_of(item_value: str) -> list[str]:
    """The event texts of an item by position; a settled position is blank."""
    return item_value.split(_SEPARATOR) if item_value else []


def _count(texts: list[str]) -> int:
    return sum(1 for text in texts if text)


class BufferInUse(ConfigurationError):
    """Another process (a running collector) holds the buffer directory."""


class EventBuffer:
    """Durable FIFO of serialised events plus the parked store."""

    def __init__(self, directory: str, max_items: int, sync: str = "full") -> None:
        try:
            os.makedirs(directory, exist_ok=True)
            if not os.access(directory, os.W_OK | os.X_OK):
                raise PermissionError(f"no write permission on {directory}")
            self._lock_file = _lock_directory(directory)
            self._cache = open_cache(directory, sync)
            self.parked = ParkedStore(os.path.join(directory, "parked"), sync)
        except ConfigurationError:
            raise
        except Exception as exc:
            raise ConfigurationError(
                f"[collector] buffer_dir {directory!r} is not a writable directory: {exc}"
            ) from None
        self.directory = directory
        self.max_items = max_items
        self._count_lock = threading.Lock()
        self._count = sum(
            _count(_events_of(self._cache.get(key) or "")) for key in self._cache.iterkeys())

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> EventBuffer:
        group = conf.collector
        if not group.buffer_dir:
            raise ConfigurationError("[collector] buffer_dir is not set")
        return cls(group.buffer_dir, group.buffer_max_items, group.buffer_sync)

    # --- writing (listener threads) ---------------------------------------------------

    def append(self, events_json: Sequence[str]) -> None:
        """Append serialised events as one item, committed before returning."""
        if not events_json:
            return
        self._cache.push(_SEPARATOR.join(events_json), tag=time.time())
        with self._count_lock:
            self._count += len(events_json)

    def is_full(self) -> bool:
        return self.depth() >= self.max_items

    def park(self, record: dict[str, Any]) -> None:
        """Keep something that cannot be buffered or delivered, with its reason."""
        self.parked.park(record)

    # --- reading (delivery threads) --------------------------------------------------

    def peek(self, limit: int, skip: Collection[int] = ()) -> list[BufferedEvent]:
        """The oldest events, whole items only while they fit in ``limit`` (at least
        one item), without removing them; items whose key is in ``skip`` (claimed by
        another delivery request) are passed over."""
        events: list[BufferedEvent] = []
        for key in self._cache.iterkeys():
            if key in skip:
                continue
            value = self._cache.get(key)
            if value is None:
                continue
            texts = _events_of(value)
            if events and len(events) + _count(texts) > limit:
                break
            events += [BufferedEvent(key, i, text) for i, text in enumerate(texts)
                       if text]
            if len(events) >= limit:
                break
        return events[:limit] if len(events) > limit else events

    def remove(self, events: Iterable[BufferedEvent]) -> None:
        """Drop settled events in one committed transaction; empty items disappear."""
        by_item: dict[int, set[int]] = {}
        for event in events:
            by_item.setdefault(event.item, set()).add(event.position)
        removed = 0
        with self._cache.transact():
            for key, positions in by_item.items():
                value, stored_at = self._cache.get(key, tag=True)
                if value is None:
                    continue
                texts = _events_of(value)
                # a settled position is blanked, so the others keep their positions
                kept = ["" if i in positions else text for i, text in enumerate(texts)]
                removed += sum(1 for i, text in enumerate(texts) if i in positions and text)
                if any(kept):
                    self._cache.set(key, _SEPARATOR.join(kept), tag=stored_at)
                else:
                    self._cache.delete(key)
        with self._count_lock:
            self._count -= removed

    def move_to_parked(self, event: BufferedEvent, reason: str) -> None:
        """Park one buffered event the API refuses on its own, then drop it here."""
        self.park({"reason": reason, "event": event.value})
        self.remove([event])

    # --- observation ------------------------------------------------------------------

    def depth(self) -> int:
        """Events in the buffer."""
        with self._count_lock:
            return self._count

    def parked_depth(self) -> int:
        return len(self.parked)

    def parked_items(self) -> list[dict[str, Any]]:
        """Everything parked, oldest first (for operators and tests)."""
        return [item.record for item in self.parked.items()]

    def oldest_age(self, now: float | None = None) -> float:
        """Seconds since the oldest buffered item was written (0 when empty)."""
        stamp = self.oldest_stamp()
        if stamp is None:
            return 0.0
        return max(0.0, (time.time() if now is None else now) - stamp)

    def oldest_stamp(self) -> float | None:
        """When (``time.time()``) the oldest buffered item was written; None when
        the buffer is empty.

        Plain reads, no write transaction (``Cache.peek`` takes SQLite's write lock):
        this runs at every metrics scrape, beside the listener's commits."""
        for key in self._cache.iterkeys():
            value, stored_at = self._cache.get(key, tag=True)
            if value is not None and stored_at is not None:
                return float(stored_at)
        return None

    def close(self) -> None:
        self._cache.close()
        self.parked.close()
        self._lock_file.close()


def _lock_directory(directory: str) -> IO[str]:
    handle = open(os.path.join(directory, "collector.lock"), "a")  # noqa: SIM115
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        raise BufferInUse(
            f"[collector] buffer_dir {directory!r} is in use by another collector") from None
    return handle
