"""Whose "now" bounds an event (reporting.future): the API's clock for a wall-clock
cloud, a simulated cloud's own clock (read at its clock_url, again only when an event
is dated past the last reading's bound), none for a simulated cloud without one."""

from __future__ import annotations

import datetime as dt
from typing import Any

from reporting.future import FutureClock
from reporting.sync.clouds import CloudEntry
from reporting.sync.told_instant import ClockUnreadable
from reporting.validation import ItemValidator, ValidEvent, item_instant

WALL_NOW = dt.datetime(2026, 12, 2, 6, 0)
SKEW = dt.timedelta(minutes=5)
URL = "http://127.0.0.1:1/_sim/clock"
CLOUDS = {
    "wall": CloudEntry("wall", "openstack", "openstack", None),
    "sim": CloudEntry("sim", "openstack", "openstack", None, "simulated", URL),
    "blind": CloudEntry("blind", "openstack", "openstack", None, "simulated", None),
}


class SimClock:
    def __init__(self, at: dt.datetime) -> None:
        self.at = at
        self.reads = 0
        self.answers = True

    def __call__(self, url: str) -> tuple[dt.datetime, Any]:
        assert url == URL
        if not self.answers:
            raise ClockUnreadable(f"{url}: connection refused")
        self.reads += 1
        return self.at.replace(tzinfo=dt.UTC), None


def item(cloud: str, timestamp: dt.datetime, n: int = 0) -> dict[str, Any]:
    return {"event_id": f"e{n}", "event_type": "floatingip.update.end", "platform": "openstack",
            "cloud": cloud, "resource_type": "floating_ip", "resource_id": f"f{n}",
            "project_id": "p1", "timestamp": timestamp.isoformat() + "Z",
            "source": "collector", "payload": {}}


def check(clock: FutureClock, *items: dict[str, Any]) -> list[ValidEvent | str]:
    validator = ItemValidator({}, {}, require_size_schema=False,
                              future=clock.bounds(items, item_instant))
    return validator.check_all(items)


def test_a_wall_clock_cloud_is_bounded_by_the_api_clock() -> None:
    clock = FutureClock(SKEW, CLOUDS, now=lambda: WALL_NOW, read=SimClock(WALL_NOW))
    ok, late = check(clock, item("wall", WALL_NOW + SKEW, 1), item("wall", WALL_NOW + 2 * SKEW, 2))
    assert isinstance(ok, ValidEvent)
    assert isinstance(late, str) and late.startswith(
        "future_timestamp: /timestamp: 2026-12-02T06:10:00.000000Z is 600 s after the API's clock")


def test_a_simulated_cloud_is_bounded_by_its_own_clock_read_again_when_needed() -> None:
    # A simulated month ahead of the wall clock: its events are not the future.
    sim = SimClock(dt.datetime(2027, 3, 1))
    clock = FutureClock(SKEW, CLOUDS, now=lambda: WALL_NOW, read=sim)
    (ok,) = check(clock, item("sim", dt.datetime(2027, 3, 1, 0, 4)))
    assert isinstance(ok, ValidEvent) and sim.reads == 1
    check(clock, item("sim", dt.datetime(2027, 3, 1, 0, 1)))
    assert sim.reads == 1  # within the held reading's bound: not read again
    sim.at = dt.datetime(2027, 3, 1, 0, 10)  # the clock moved on
    (moved,) = check(clock, item("sim", dt.datetime(2027, 3, 1, 0, 10)))
    assert isinstance(moved, ValidEvent) and sim.reads == 2
    (ahead,) = check(clock, item("sim", dt.datetime(2027, 3, 1, 1, 0)))
    assert isinstance(ahead, str) and "after the simulated clock of cloud 'sim'" in ahead
    # A simulated month behind the wall clock bounds its events all the same.
    (wall_ok,) = check(clock, item("wall", WALL_NOW))
    assert isinstance(wall_ok, ValidEvent)


def test_an_unreadable_simulated_clock_refuses_what_it_cannot_bound() -> None:
    sim = SimClock(dt.datetime(2027, 3, 1))
    sim.answers = False
    clock = FutureClock(SKEW, CLOUDS, now=lambda: WALL_NOW, read=sim)
    (refused,) = check(clock, item("sim", dt.datetime(2026, 1, 1)))
    assert isinstance(refused, str) and "which did not answer" in refused
    sim.answers = True
    (ok,) = check(clock, item("sim", dt.datetime(2026, 1, 1)))
    assert isinstance(ok, ValidEvent)


def test_a_simulated_cloud_without_a_clock_is_not_bounded() -> None:
    clock = FutureClock(SKEW, CLOUDS, now=lambda: WALL_NOW, read=SimClock(WALL_NOW))
    (ok,) = check(clock, item("blind", dt.datetime(2099, 1, 1)))
    assert isinstance(ok, ValidEvent)
    assert clock.bound("blind") is None
