"""The keystoneauth session a run process keeps between runs of one cloud.

A run process (``reporting.sync.child``) does one run after another.  Building a
session per run meant a token request, identity and nova version discovery and the
per-service adapters every time, a third of a small cloud's run.  Kept between runs:

- the token: keystoneauth fetches a new one by itself when it is within two minutes
  of its expiry, and once on a 401 (a revoked token), retrying the request with it;
- version discovery (the caches of the session and of its auth plugin);
- the per-service keystoneauth adapters.

The clouds.yaml entry is still resolved afresh on every run: the session is reused
only while it resolves to exactly the same settings (credentials included), so a
rotated secret reaches the next run with a new session.  A session is dropped after
a run that recorded any error or aborted (the next run starts clean), and is never
older than ``MAX_AGE_S`` (a nova upgraded under a long-lived run process is
discovered again).  One run at a time holds a session: ``take`` hands it out and
``keep`` gives it back, so concurrent runs in one process never share one.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from typing import Any

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import session as ks_session

# How long a session serves runs before it is built again.
MAX_AGE_S = 3600.0


@dataclasses.dataclass
class KeptSession:
    """A session, the resolved clouds.yaml settings it was built from, its adapters."""

    session: ks_session.Session
    settings: tuple[str, dict[str, Any]]  # (entry name, CloudRegion.config)
    born: float  # time.monotonic()
    adapters: dict[str, ks_adapter.Adapter] = dataclasses.field(default_factory=dict)


def settings_of(os_cloud: str, region: Any) -> tuple[str, dict[str, Any]]:
    """What a session depends on: the entry's name and everything it resolved to."""
    return os_cloud, dict(region.config)


class SessionKeeper:
    """The kept sessions of one process, one per cloud (Tally's cloud name)."""

    def __init__(self, max_age_s: float = MAX_AGE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.max_age_s = max_age_s
        self.clock = clock
        self._kept: dict[str, KeptSession] = {}
        self._lock = threading.Lock()

    def take(self, cloud: str, settings: tuple[str, dict[str, Any]]) -> KeptSession | None:
        """The kept session of ``cloud`` if it was built from ``settings`` and is young
        enough (it is no longer kept until ``keep``); None otherwise."""
        with self._lock:
            kept = self._kept.pop(cloud, None)
        if kept is None or kept.settings != settings:
            return None
        if self.clock() - kept.born >= self.max_age_s:
            return None
        return kept

    def new(self, session: ks_session.Session,
            settings: tuple[str, dict[str, Any]]) -> KeptSession:
        return KeptSession(session, settings, self.clock())

    def keep(self, cloud: str, kept: KeptSession) -> None:
        """Keep ``kept`` for the next run of ``cloud`` (replacing any other)."""
        with self._lock:
            self._kept[cloud] = kept

    def drop(self, cloud: str) -> None:
        with self._lock:
            self._kept.pop(cloud, None)

    def clouds(self) -> list[str]:
        with self._lock:
            return sorted(self._kept)


_PROCESS_KEEPER: SessionKeeper | None = None


def keep_sessions_in_this_process() -> SessionKeeper:
    """Turn keeping on for this process (the run process does, at start) and return
    its keeper.  Elsewhere (a test, a one-off command) each run builds its own."""
    global _PROCESS_KEEPER
    if _PROCESS_KEEPER is None:
        _PROCESS_KEEPER = SessionKeeper()
    return _PROCESS_KEEPER


def process_keeper() -> SessionKeeper | None:
    return _PROCESS_KEEPER
