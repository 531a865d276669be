"""How far into the future an event may be dated (docs/canonical-event.md, "Timestamps").

An event dated years ahead (a sender's clock gone wrong) would sort last in its
resource's history for ever: the resource bills until then, and every sync defers it
as recent.  Ingest refuses an event dated more than ``[ingest] max_future_skew_s``
after its cloud's present (reason ``future_timestamp:``, dead-lettered, replayable once
the sender's clock is fixed or the option raised).

A cloud's present is the API's clock, except for a cloud whose clouds-file entry is
``clock: simulated`` (tally-simcloud): its events are dated by its own clock, read at
``clock_url``.  A simulated clock only moves forward, so a reading stays a lower bound
of its present; it is read again only when an event is dated past the last reading's
bound.  A simulated cloud without ``clock_url`` has no present the API can know: its
events are not bounded.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from oslo_config import cfg

from mapping.event import format_timestamp
from reporting.clock import utcnow
from reporting.sync.clouds import CloudEntry
from reporting.sync.told_instant import ClockUnreadable, read_clock

LOG = logging.getLogger(__name__)

REASON_PREFIX = "future_timestamp:"

future_opts: list[cfg.Opt] = [
    cfg.IntOpt(
        "max_future_skew_s",
        default=300,
        min=0,
        help="Seconds an event may be dated after its cloud's present (the API's clock; "
        "a clock: simulated cloud's own clock, read at its clock_url). A later event is "
        "refused with a future_timestamp: reason and kept in the dead letter: fix the "
        "sender's clock (or raise this option), then replay it. Also bounds how far "
        "ahead a sync may be told its instant and what a sync defers as recent.",
    ),
]


@dataclasses.dataclass(frozen=True)
class FutureBound:
    """The latest instant an event of one cloud may carry, and the clock it is
    measured on."""

    now: dt.datetime  # naive UTC: the cloud's present
    skew: dt.timedelta
    clock: str  # how a reason names the clock

    @property
    def latest(self) -> dt.datetime:
        return self.now + self.skew

    def reason(self, timestamp: dt.datetime) -> str:
        ahead = (timestamp - self.now).total_seconds()
        return (f"{REASON_PREFIX} /timestamp: {format_timestamp(timestamp)} is {ahead:.0f} s "
                f"after {self.clock} ({format_timestamp(self.now)}), more than "
                f"[ingest] max_future_skew_s ({self.skew.total_seconds():.0f} s) allows: an "
                "event from the future would be the resource's newest fact until then; fix "
                "the sender's clock (or raise the option) and replay it")


Reader = Callable[[str], tuple[dt.datetime, Any]]


def _naive(moment: dt.datetime) -> dt.datetime:
    return moment.astimezone(dt.UTC).replace(tzinfo=None) if moment.tzinfo else moment


class FutureClock:
    """Each cloud's ``FutureBound``: the API's clock plus the skew, or a simulated
    cloud's own clock plus the skew."""

    def __init__(self, skew: dt.timedelta, clouds: Mapping[str, CloudEntry] | None = None, *,
                 now: Callable[[], dt.datetime] = utcnow, read: Reader = read_clock) -> None:
        self.skew = skew
        self._simulated = {name: entry.clock_url for name, entry in (clouds or {}).items()
                           if entry.clock == "simulated"}
        self._now = now
        self._read = read
        self._readings: dict[str, dt.datetime] = {}

    @classmethod
    def from_conf(cls, conf: cfg.ConfigOpts, clouds: Mapping[str, CloudEntry]) -> FutureClock:
        return cls(dt.timedelta(seconds=int(conf.ingest.max_future_skew_s)), clouds)

    def bound(self, cloud: str, needed: dt.datetime | None = None) -> FutureBound | None:
        """``cloud``'s bound (None: a simulated cloud without a clock to read).  A
        simulated clock is read when no reading is held or when ``needed`` lies past
        the held reading's bound; a clock that does not answer keeps the last
        reading (none: the bound is that of an unreadable clock, the epoch's)."""
        if cloud not in self._simulated:
            return FutureBound(self._now(), self.skew, "the API's clock")
        url = self._simulated[cloud]
        if url is None:
            return None
        held = self._readings.get(url)
        if held is None or (needed is not None and needed > held + self.skew):
            try:
                held = _naive(self._read(url)[0])
                self._readings[url] = held
            except ClockUnreadable as exc:
                LOG.warning("the simulated clock of cloud %s did not answer: %s", cloud, exc)
                if held is None:
                    return FutureBound(dt.datetime.min, self.skew,
                                       f"the simulated clock of cloud {cloud!r}, which did not "
                                       f"answer (GET {url})")
        return FutureBound(held, self.skew, f"the simulated clock of cloud {cloud!r} (GET {url})")

    def bounds(self, items: Iterable[Any], newest: Callable[[Any], dt.datetime | None]
               ) -> dict[str, FutureBound | None]:
        """The bound of every cloud ``items`` name; ``newest(item)`` is an item's
        instant when it has one (a simulated clock is read again only past it)."""
        needed: dict[str, dt.datetime | None] = {}
        for item in items:
            cloud = item.get("cloud") if isinstance(item, dict) else None
            if not isinstance(cloud, str):
                continue
            instant = newest(item) if cloud in self._simulated else None
            held = needed.get(cloud)
            needed[cloud] = instant if held is None or (instant is not None and instant > held) \
                else held
        return {cloud: self.bound(cloud, instant) for cloud, instant in needed.items()}
