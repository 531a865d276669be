"""The locks that make a close sound under concurrent ingest and several replicas.

PostgreSQL advisory locks, all in one key space:
- ``INGEST_KEY``: every ingest transaction holds it in *shared* mode from before it
  draws its first receipt number (``events.seq``) until it commits.  A close takes it
  *exclusively* for an instant: that waits for every ingest in flight to commit, and
  while it is held no ingest can draw a number.  The close's snapshot is taken inside
  that instant, so it holds every event with ``seq <= cutoff`` and no other can ever
  commit (a later ingest draws a larger number from the sequence).
- ``period_key(cloud, period)``: one close of a period at a time across replicas.
- ``PRICES_KEY``: adding a price list version and closing a period exclude each other,
  so no version can take effect inside a period while it is being closed.

SQLite has one writer: the close holds the write lock for its whole transaction.
The statements are operations of the write seam (``reporting.db.writes``):
``store_events`` (ingest holds ``INGEST_KEY`` there), ``hold_shared``, ``xact_lock``,
``begin_write``, ``serialised``, ``snapshot``.
"""

from __future__ import annotations

import hashlib


def _key(*parts: str) -> int:
    digest = hashlib.blake2b("\x1f".join(("tally-billing", *parts)).encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big", signed=True)


INGEST_KEY = _key("ingest")
PRICES_KEY = _key("prices")


def period_key(cloud: str, period: str) -> int:
    return _key("period", cloud, period)

