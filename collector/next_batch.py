"""What a delivery thread sends next: the claims of the requests in flight, and
whether a partial batch waits for more.

A thread claims the oldest unclaimed buffer items, whole items only while they fit
in ``batch_size`` (``EventBuffer.peek``), before it sends them; the claim is released
once the sender has settled them (``claim`` is a context manager), so no event is
in two requests at once and the items a failed request kept are claimed again by
the next thread.  Claims are about throughput and order only: whether an event may
leave the buffer is decided by ``collector.sender`` alone.

While the listener drains a backlog (``collector.backlog``), a partial batch holding
everything that is left is held back while another request is in flight (the busy
thread takes it, grown, when it is done) and until its oldest event has waited
``linger`` seconds: the backlog then travels in full batches, since every request
costs both sides work of its own.  A trickle, and the rest once the backlog is
drained, go at once.  The counts are in memory, so holding back reads the buffer at
most once per oldest item, not at every listener write that wakes a thread.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from collector.backlog import BacklogSignal
from collector.buffer import BufferedEvent, EventBuffer
from collector.delivery_config import DeliveryConfig
from mapping.event import MAX_BATCH


class NextBatch:
    """The claims and the linger of one buffer's delivery threads.  Thread-safe; its
    lock covers the buffer reads that choose a batch, never a request."""

    def __init__(
        self,
        config: DeliveryConfig,
        buffer: EventBuffer,
        backlog: BacklogSignal | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._buffer = buffer
        self._batch_size = min(config.batch_size, MAX_BATCH)
        self._linger = config.linger
        self._idle_poll = config.idle_poll
        # Whether the listener drains a backlog; None: taken as always draining.
        self._backlog = backlog
        self._clock = clock
        self._wall_clock = wall_clock  # the buffer's stamps are wall-clock time
        self._lock = threading.Lock()
        self._claimed: set[int] = set()  # buffer items inside a request in flight
        self._claimed_events = 0  # events of those items sent
        # clock() when a lingering partial batch (of the oldest unclaimed item) is
        # due; None: not known since the last claim or release
        self._linger_due: float | None = None

    @contextmanager
    def claim(self) -> Iterator[list[BufferedEvent]]:
        """The oldest unclaimed events, owned by the caller until the block ends;
        empty when there is nothing to send now."""
        items = self._take()
        try:
            yield items
        finally:
            if items:
                self._release(items)

    def idle_wait(self) -> float:
        """How long a thread that found nothing to send waits for new events before
        looking again: until a lingering partial batch is due or the backlog is taken
        as drained, at most ``idle_poll``."""
        with self._lock:
            due = min(math.inf if self._linger_due is None else self._linger_due,
                      self._more_expected_until())
        until_due = due - self._clock()
        return min(self._idle_poll, until_due) if until_due > 0 else self._idle_poll

    def _take(self) -> list[BufferedEvent]:
        with self._lock:
            unclaimed = self._buffer.depth() - self._claimed_events
            if unclaimed <= 0 or (unclaimed < self._batch_size and self._held_back()):
                return []
            items = self._buffer.peek(self._batch_size, skip=self._claimed)
            self._claimed.update(event.item for event in items)
            self._claimed_events += len(items)
            self._linger_due = None
        return items

    def _release(self, items: list[BufferedEvent]) -> None:
        with self._lock:
            self._claimed.difference_update(event.item for event in items)
            self._claimed_events -= len(items)
            self._linger_due = None

    def _held_back(self) -> bool:
        """(Under the lock, for a partial batch of everything left) whether to wait."""
        now = self._clock()
        if now >= self._more_expected_until():
            return False  # no backlog behind it (any more): nothing to wait for
        if self._claimed:
            return True  # the busy thread takes it, grown, when it is done
        if self._linger_due is None:
            stamp = self._buffer.oldest_stamp()  # nothing is claimed: the oldest item
            # a wall-clock stamp: a clock stepped back does not hold the batch longer
            wait = -1.0 if stamp is None else stamp + self._linger - self._wall_clock()
            self._linger_due = now + wait if 0 < wait <= self._linger else 0.0
        return now < self._linger_due

    def _more_expected_until(self) -> float:
        """clock() until which the listener is expected to add more."""
        return math.inf if self._backlog is None else self._backlog.expected_until()
