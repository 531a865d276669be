"""The pause after failed requests to the Reporting API, shared by every thread that
sends there.

Capped exponential backoff with equal jitter: after ``n`` consecutive failures the
pause is drawn from ``[c/2, c]`` with ``c = min(maximum, initial * 2**n)``, so
collectors that failed together do not come back together, and a ``Retry-After``
the API sent is honoured up to the cap.  The pause is one for all threads: a thread
that fails while it runs joins it instead of starting another, so the requests in
flight when an outage began count as one failure, not one each; a success ends the
count.  Only its own state is under its lock, never a request.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable


class Backoff:
    """One shared pause.  ``failed`` after a failure, ``succeeded`` after a success,
    ``wait`` before sending.  Thread-safe."""

    def __init__(
        self,
        initial: float,
        maximum: float,
        jitter: Callable[[float, float], float] = random.uniform,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._initial = initial
        self._maximum = maximum
        self._jitter = jitter
        self._clock = clock
        self._lock = threading.Lock()
        self._failures = 0  # consecutive failures counted so far
        self._resume_at = -float("inf")  # clock() before which nothing is sent

    @property
    def failures(self) -> int:
        """The consecutive failures counted so far (those that joined a running pause
        are not counted: see the module's docstring)."""
        with self._lock:
            return self._failures

    def next_delay(self, retry_after: float | None = None) -> float:
        """Count one more failure and answer its pause (without starting it)."""
        with self._lock:
            return self._count_failure(retry_after)

    def failed(self, retry_after: float | None = None) -> float:
        """Start the pause after a failure, or join the one already running; answers
        the seconds left of it."""
        with self._lock:
            now = self._clock()
            if now >= self._resume_at:
                self._resume_at = now + self._count_failure(retry_after)
            return self._resume_at - now

    def succeeded(self) -> None:
        with self._lock:
            self._failures = 0

    def remaining(self) -> float:
        """Seconds left of the pause (0: requests may be sent)."""
        with self._lock:
            return max(0.0, self._resume_at - self._clock())

    def wait(self, stop: threading.Event) -> bool:
        """Sleep through the pause (another thread may lengthen it meanwhile); True
        when ``stop`` was set."""
        while True:
            remaining = self.remaining()
            if remaining <= 0:
                return stop.is_set()
            if stop.wait(remaining):
                return True

    def _count_failure(self, retry_after: float | None) -> float:
        ceiling = min(self._maximum, self._initial * 2 ** min(self._failures, 30))
        delay = ceiling / 2 + self._jitter(0, ceiling / 2)
        if retry_after is not None:
            delay = max(delay, min(retry_after, self._maximum))
        self._failures += 1
        return delay
