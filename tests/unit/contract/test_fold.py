"""The pure fold (reporting/fold.py, docs/reporting-api.md)."""

from __future__ import annotations

import datetime as dt

from hypothesis import given
from hypothesis import strategies as st

from reporting.fold import FoldEvent, Interval, fold, live_at

T0 = dt.datetime(2026, 11, 1, 0, 0, 0)


def ev(seq: int, minutes: float, event_type: str, *, project: str = "p1", **payload) -> FoldEvent:
    return FoldEvent(
        event_id=f"e{seq}",
        event_type=event_type,
        project_id=project,
        timestamp=T0 + dt.timedelta(minutes=minutes),
        payload=payload,
        seq=seq,
    )


SMALL = {"vcpus": 1, "ram_gb": 1, "disk_gb": 10, "flavor": "m1.small"}
LARGE = {"vcpus": 4, "ram_gb": 8, "disk_gb": 40, "flavor": "m1.large"}


def test_create_resize_poweroff_delete() -> None:
    history = [
        ev(1, 0, "compute.instance.create.end", state="active", size=SMALL),
        ev(2, 10, "compute.instance.resize.end", state="active", size=LARGE),
        ev(3, 20, "compute.instance.power_off", state="shutoff"),
        ev(4, 30, "compute.instance.delete.end", project=""),
    ]
    row, intervals = fold(history)
    assert row is not None
    assert not row.live
    assert row.project_id == "p1"  # an empty project on a delete keeps the old one
    assert row.size == LARGE and row.state == "shutoff"
    assert row.created_at == T0 and row.deleted_at == T0 + dt.timedelta(minutes=30)
    assert row.last_event_id == "e4"
    assert intervals == [
        Interval(T0, T0 + dt.timedelta(minutes=10), "p1", "active", SMALL, "e1"),
        Interval(T0 + dt.timedelta(minutes=10), T0 + dt.timedelta(minutes=20), "p1", "active", LARGE, "e2"),
        Interval(T0 + dt.timedelta(minutes=20), T0 + dt.timedelta(minutes=30), "p1", "shutoff", LARGE, "e3"),
    ]


def test_update_that_changes_nothing_opens_no_interval() -> None:
    _, intervals = fold([
        ev(1, 0, "volume.create.end", state="available", size={"size_gb": 1, "type": "ssd"}),
        ev(2, 5, "volume.retype", state="available", size={"size_gb": 1, "type": "ssd"}),
    ])
    assert [i.event_id for i in intervals] == ["e1"]
    assert intervals[0].end is None


def test_same_instant_facts_order_by_receipt_and_drop_zero_length() -> None:
    # A sync.create and the collector's create at one instant: the later receipt wins.
    row, intervals = fold([
        ev(2, 0, "octavia.loadbalancer.create.end", state="active", size={"listeners": 0, "pools": 0}),
        ev(1, 0, "sync.create", state="active", size={"listeners": 2, "pools": 1}),
    ])
    assert row is not None and row.size == {"listeners": 0, "pools": 0}
    assert [(i.event_id, i.size) for i in intervals] == [("e2", {"listeners": 0, "pools": 0})]


def test_update_without_create_is_not_live() -> None:
    row, intervals = fold([ev(1, 0, "volume.resize.end", state="available", size={"size_gb": 2, "type": "x"})])
    assert row is not None and not row.live and intervals == []


def test_live_at() -> None:
    _, intervals = fold([
        ev(1, 0, "image.create", state="active", size={"size_gb": 1}),
        ev(2, 60, "image.delete"),
    ])
    assert live_at(intervals, T0) is not None
    assert live_at(intervals, T0 + dt.timedelta(minutes=59)) is not None
    assert live_at(intervals, T0 + dt.timedelta(minutes=60)) is None
    assert live_at(intervals, T0 - dt.timedelta(seconds=1)) is None


_TYPES = ["compute.instance.create.end", "compute.instance.resize.end",
          "compute.instance.power_off", "compute.instance.delete.end", "sync.update"]


@st.composite
def histories(draw: st.DrawFn) -> list[FoldEvent]:
    n = draw(st.integers(min_value=1, max_value=12))
    out = []
    for seq in range(1, n + 1):
        out.append(ev(
            seq,
            draw(st.integers(min_value=0, max_value=6)),
            draw(st.sampled_from(_TYPES)),
            project=draw(st.sampled_from(["p1", "p2", ""])),
            state=draw(st.sampled_from(["active", "shutoff"])),
            size=draw(st.sampled_from([SMALL, LARGE])),
        ))
    return out


@given(histories(), st.randoms())
def test_any_permutation_folds_the_same(history: list[FoldEvent], rnd) -> None:
    shuffled = list(history)
    rnd.shuffle(shuffled)
    assert fold(shuffled) == fold(history)
