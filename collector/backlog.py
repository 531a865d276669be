"""Whether the listener is draining a backlog, as the delivery needs to know it.

oslo hands the endpoint full listener batches while notifications wait in RabbitMQ
and a partial one when the queue ran dry within the batch timeout.  A backlog that
ends exactly on a full batch sends no partial one at all, though: nothing tells the
endpoint that the queue is empty.  So the signal also expires: while a backlog
drains, full batches arrive at a steady pace, and when the next one is overdue by
twice the usual interval the backlog is taken as drained.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

# Weight of the newest interval in the running average of intervals between full
# batches: recent enough to follow a drain that speeds up or slows down, smooth
# enough that one slow batch (a GIL pause, an fsync) does not end it.
_NEWEST_WEIGHT = 0.25
# A backlog is over when no full batch came for this many usual intervals.
_OVERDUE_FACTOR = 2.0


class BacklogSignal:
    """Told by the endpoint about every batch, asked by the delivery until when more
    events are expected.  Thread-safe."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._last_full: float | None = None  # clock() of the last full batch
        self._interval: float | None = None  # running average between full batches

    def batch_handled(self, full: bool) -> None:
        """A listener batch reached the endpoint; ``full``: it had batch_size messages."""
        now = self._clock()
        with self._lock:
            if not full:
                self._last_full = self._interval = None
                return
            if self._last_full is not None:
                interval = max(0.0, now - self._last_full)
                self._interval = interval if self._interval is None else (
                    (1 - _NEWEST_WEIGHT) * self._interval + _NEWEST_WEIGHT * interval)
            self._last_full = now

    def expected_until(self) -> float:
        """The clock() reading until which another full batch is expected: -inf when
        none is (no backlog, or it ended), +inf after a first full batch (no pace
        known yet: the caller's own limit applies)."""
        with self._lock:
            if self._last_full is None:
                return -math.inf
            if self._interval is None:
                return math.inf
            return self._last_full + _OVERDUE_FACTOR * self._interval

    def draining(self) -> bool:
        return self._clock() < self.expected_until()
