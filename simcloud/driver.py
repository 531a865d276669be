"""The driver loop: move the simulated month forward and tell each sync where it stands.

Each step moves the virtual clock (publishing what happened) and then asks Tally's
Reporting API for a synchronous sync run told that instant
(``POST /internal/sync/{cloud}?at=T``), as the ``tally-sync`` CronJob would every
ten minutes of a real cloud's life.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Iterator
from typing import Any, Protocol
from urllib.parse import quote

import requests

from mapping.event import format_timestamp, parse_timestamp

LOG = logging.getLogger(__name__)


class Clock(Protocol):
    """What the loop needs of the world: where it stands and how to move it."""

    def now(self) -> dt.datetime: ...

    def advance_to(self, at: dt.datetime) -> dict[str, Any]: ...


class WorldClock:
    """The clock of an in-process :class:`~simcloud.world.World`."""

    def __init__(self, world: Any) -> None:
        self._world = world

    def now(self) -> dt.datetime:
        return self._world.clock

    def advance_to(self, at: dt.datetime) -> dict[str, Any]:
        return self._world.advance_to(at)


class HttpClock:
    """The clock of a simulated cloud served elsewhere (``/_sim/clock``)."""

    def __init__(self, base_url: str, session: requests.Session | None = None,
                 timeout: float = 600.0) -> None:
        self._url = base_url.rstrip("/") + "/_sim/clock"
        self._session = session or requests.Session()
        self._timeout = timeout

    def now(self) -> dt.datetime:
        response = self._session.get(self._url, timeout=self._timeout)
        response.raise_for_status()
        return parse_timestamp(response.json()["at"])

    def advance_to(self, at: dt.datetime) -> dict[str, Any]:
        response = self._session.post(self._url, json={"at": format_timestamp(at)},
                                      timeout=self._timeout)
        response.raise_for_status()
        return response.json()["moved"]


@dataclasses.dataclass(frozen=True)
class SyncResult:
    status: int
    body: Any


def http_sync(reporting_url: str, cloud: str, token: str | None = None,
              session: requests.Session | None = None,
              timeout: float = 120.0) -> Callable[[dt.datetime], SyncResult]:
    """A sync trigger calling the Reporting API's sync endpoint, told the instant."""
    http = session or requests.Session()
    url = f"{reporting_url.rstrip('/')}/internal/sync/{quote(cloud, safe='')}"
    headers = {"Authorization": f"Bearer {token}"} if token else {}

    def sync(at: dt.datetime) -> SyncResult:
        response = http.post(url, params={"at": format_timestamp(at)}, headers=headers,
                             timeout=timeout)
        try:
            body = response.json()
        except ValueError:
            body = response.text
        return SyncResult(response.status_code, body)

    return sync


@dataclasses.dataclass(frozen=True)
class Step:
    at: dt.datetime
    moved: dict[str, Any]
    sync: SyncResult | None


def drive(clock: Clock, sync: Callable[[dt.datetime], SyncResult] | None, *,
          until: dt.datetime, step: dt.timedelta = dt.timedelta(minutes=10)) -> Iterator[Step]:
    """Step the clock to ``until`` by ``step``, syncing after each move; yields each step.

    A failed sync (500: the run recorded errors; 409: another run holds the cloud)
    is reported in the step and the loop goes on, as a CronJob would.
    """
    if step <= dt.timedelta(0):
        raise ValueError(f"step must be positive, got {step}")
    at = clock.now()
    while at < until:
        at = min(at + step, until)
        moved = clock.advance_to(at)
        result = sync(at) if sync is not None else None
        if result is not None and result.status != 200:
            LOG.warning("sync told %s answered %s", format_timestamp(at), result.status)
        yield Step(at, moved, result)
