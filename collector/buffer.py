"""The collector's disk buffer: mapped events waiting for the Reporting API.

A diskcache ``Cache`` used as a FIFO queue (``push`` gives increasing integer
keys).  Every write is one SQLite transaction, committed before the method
returns; with ``buffer_sync = full`` (the default) the commit is also fsynced, so
an event the listener acknowledged survives ``kill -9`` and a power cut.

Values are the canonical event serialised as JSON text (kept in the SQLite row,
never in a side file), tagged with the instant they were buffered, which gives
the oldest item's age.  Nothing is ever evicted: diskcache's eviction is off and
the size limit is enforced by the listener holding back acknowledgements.

Items that cannot be delivered at all (see ``collector.delivery``) and
notifications that cannot be buffered are moved to a second store, ``parked/``
beside the buffer, with the reason: kept on disk for an operator, never dropped.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

import diskcache
from oslo_config import cfg

from collector.errors import ConfigurationError

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

_SYNCHRONOUS = {"normal": 1, "full": 2}
# Keep every value inside SQLite: a side file would not be part of the transaction.
_MAX_INLINE_BYTES = 2**30


def _open_cache(directory: str, sync: str) -> diskcache.Cache:
    return diskcache.Cache(
        directory,
        eviction_policy="none",
        statistics=False,
        disk_min_file_size=_MAX_INLINE_BYTES,
        sqlite_synchronous=_SYNCHRONOUS[sync],
        timeout=60,
    )


class EventBuffer:
    """Durable FIFO of serialised events plus the parked store."""

    def __init__(self, directory: str, max_items: int, sync: str = "full") -> None:
        try:
            os.makedirs(directory, exist_ok=True)
            if not os.access(directory, os.W_OK | os.X_OK):
                raise PermissionError(f"no write permission on {directory}")
            self._cache = _open_cache(directory, sync)
            self._parked = _open_cache(os.path.join(directory, "parked"), sync)
        except Exception as exc:
            raise ConfigurationError(
                f"[collector] buffer_dir {directory!r} is not a writable directory: {exc}"
            ) from None
        self.directory = directory
        self.max_items = max_items

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts) -> EventBuffer:
        group = conf.collector
        if not group.buffer_dir:
            raise ConfigurationError("[collector] buffer_dir is not set")
        return cls(group.buffer_dir, group.buffer_max_items, group.buffer_sync)

    # --- writing (listener threads) ---------------------------------------------------

    def append(self, events_json: Sequence[str]) -> None:
        """Append serialised events in one committed transaction (all or nothing)."""
        now = time.time()
        with self._cache.transact():
            for value in events_json:
                self._cache.push(value, tag=now)

    def is_full(self) -> bool:
        return len(self._cache) >= self.max_items

    def park(self, record: dict[str, Any]) -> None:
        """Keep something that cannot be buffered or delivered, with its reason."""
        self._parked.push(json.dumps(record, default=repr, sort_keys=True), tag=time.time())

    # --- reading (delivery thread) --------------------------------------------------

    def peek(self, limit: int) -> list[tuple[int, str]]:
        """Up to ``limit`` oldest items as (key, event JSON), without removing them."""
        items = []
        for key in itertools.islice(self._cache.iterkeys(), limit):
            value = self._cache.get(key)
            if value is not None:
                items.append((key, value))
        return items

    def remove(self, keys: Iterable[int]) -> None:
        """Delete delivered items in one committed transaction."""
        with self._cache.transact():
            for key in keys:
                self._cache.delete(key)

    def move_to_parked(self, key: int, value: str, reason: str) -> None:
        """Park one buffered item the API refuses on its own, then drop it from the buffer."""
        self.park({"reason": reason, "event": value})
        self.remove([key])

    # --- observation ------------------------------------------------------------------

    def depth(self) -> int:
        return len(self._cache)

    def parked_depth(self) -> int:
        return len(self._parked)

    def parked_items(self) -> list[dict[str, Any]]:
        """Everything parked, oldest first (for operators and tests)."""
        records = []
        for key in self._parked.iterkeys():
            value = self._parked.get(key)
            if value is not None:
                records.append(json.loads(value))
        return records

    def oldest_age(self, now: float | None = None) -> float:
        """Seconds since the oldest buffered item was written (0 when empty)."""
        (key, _value), stored_at = self._cache.peek(tag=True)
        if key is None or stored_at is None:
            return 0.0
        return max(0.0, (time.time() if now is None else now) - float(stored_at))

    def close(self) -> None:
        self._cache.close()
        self._parked.close()
