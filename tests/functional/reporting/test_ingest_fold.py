"""ingest keeps the projection equal to the pure fold, whatever the arrival order.

Runs on SQLite and PostgreSQL (the ``db_url`` fixture).
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from reporting import fold
from reporting.db.engine import make_engine, make_sessionmaker
from reporting.db.models import CurrentResource, Event, ResourceInterval
from reporting.ingest import ItemResult, ingest

T0 = dt.datetime(2026, 1, 1)
KINDS = {
    "create": "compute.instance.create.end",
    "resize": "compute.instance.resize.confirm.end",
    "power_off": "compute.instance.power_off",
    "delete": "compute.instance.delete.end",
}


@pytest.fixture
def factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(db_url)
    yield make_sessionmaker(engine)
    engine.dispose()


def size(vcpus: int) -> dict[str, Any]:
    return {"vcpus": vcpus, "ram_gb": vcpus * 2, "disk_gb": 10, "flavor": f"f{vcpus}"}


def make_event(resource_id: str, n: int, kind: str, offset: int, project: str,
               state: str | None, vcpus: int | None) -> dict[str, Any]:
    payload: dict[str, Any] = {}
    if state is not None:
        payload["state"] = state
    if vcpus is not None:
        payload["size"] = size(vcpus)
    return {
        "event_id": f"{resource_id}-{n}",
        "event_type": KINDS[kind],
        "platform": "openstack",
        "cloud": "c1",
        "resource_type": "instance",
        "resource_id": resource_id,
        "project_id": "" if kind == "delete" and project == "" else (project or "p1"),
        "timestamp": (T0 + dt.timedelta(seconds=offset)).isoformat() + "Z",
        "source": "collector",
        "payload": payload,
    }


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    resource_id = f"vm-{uuid.uuid4().hex[:12]}"
    count = draw(st.integers(min_value=1, max_value=8))
    offsets = draw(st.lists(st.integers(0, 10_000), min_size=count, max_size=count, unique=True))
    events = []
    for n, offset in enumerate(offsets):
        kind = draw(st.sampled_from(sorted(KINDS)))
        project = draw(st.sampled_from(["p1", "p2", ""]))
        state = draw(st.one_of(st.none(), st.sampled_from(["active", "shutoff"])))
        vcpus = draw(st.one_of(st.none(), st.integers(1, 4)))
        events.append(make_event(resource_id, n, kind, offset, project, state, vcpus))
    return events


def expected(events: list[dict[str, Any]]) -> tuple[fold.ResourceState | None, list[fold.Interval]]:
    return fold.fold(
        fold.FoldEvent(
            event_id=e["event_id"], event_type=e["event_type"], project_id=e["project_id"],
            timestamp=dt.datetime.fromisoformat(e["timestamp"][:-1]), payload=e["payload"], seq=n,
        )
        for n, e in enumerate(events)
    )


def stored(factory: sessionmaker[Session], resource_id: str) -> tuple[Any, list[tuple[Any, ...]]]:
    key = ("openstack", "c1", "instance", resource_id)
    with factory() as session:
        row = session.get(CurrentResource, key)
        intervals = session.execute(
            sa.select(ResourceInterval.start, ResourceInterval.end, ResourceInterval.project_id,
                      ResourceInterval.state, ResourceInterval.size, ResourceInterval.event_id)
            .where(ResourceInterval.resource_id == resource_id)
            .order_by(ResourceInterval.start)
        ).all()
    return row, [tuple(i) for i in intervals]


def assert_projection(factory: sessionmaker[Session], events: list[dict[str, Any]]) -> None:
    state, intervals = expected(events)
    assert state is not None
    row, got = stored(factory, events[0]["resource_id"])
    assert row is not None
    assert (row.project_id, row.state, row.size, row.live, row.created_at, row.deleted_at,
            row.last_event_at, row.last_event_id) == (
        state.project_id, state.state, state.size, state.live, state.created_at,
        state.deleted_at, state.last_event_at, state.last_event_id)
    assert got == [(i.start, i.end, i.project_id, i.state, i.size, i.event_id) for i in intervals]


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), events=histories())
def test_any_permutation_one_event_per_batch_gives_the_same_row_and_lifecycle(
    factory: sessionmaker[Session], data: st.DataObject, events: list[dict[str, Any]]
) -> None:
    for item in data.draw(st.permutations(events)):
        (result,) = ingest(factory, [item], require_size_schema=False)
        assert result.status == "stored", result
    assert_projection(factory, events)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), events=histories())
def test_any_arrival_order_and_batching_gives_the_same_row_and_lifecycle(
    factory: sessionmaker[Session], data: st.DataObject, events: list[dict[str, Any]]
) -> None:
    order = data.draw(st.permutations(events))
    cuts = data.draw(st.sets(st.integers(1, max(1, len(order) - 1)), max_size=len(order)))
    batches, start = [], 0
    for cut in sorted(cuts) + [len(order)]:
        if cut > start:
            batches.append(order[start:cut])
            start = cut
    for batch in batches:
        results = ingest(factory, batch, require_size_schema=False)
        assert all(r.status == "stored" for r in results), results
    assert_projection(factory, events)
    # A retried delivery changes nothing.
    again = ingest(factory, order, require_size_schema=False)
    assert {r.status for r in again} == {"duplicate"}
    assert_projection(factory, events)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), lives=st.lists(histories(), min_size=2, max_size=12))
def test_batches_of_many_resources_some_held_some_late_give_each_its_fold(
    factory: sessionmaker[Session], data: st.DataObject, lives: list[list[dict[str, Any]]]
) -> None:
    """The shape a cloud sends: one batch folds many resources at once, some already
    held (their new events sort after the row, or before it: late), some new."""
    first: list[dict[str, Any]] = []
    rest: list[dict[str, Any]] = []
    for events in lives:
        held = data.draw(st.sets(st.integers(0, len(events) - 1)))
        first.extend(e for n, e in enumerate(events) if n in held)
        rest.extend(e for n, e in enumerate(events) if n not in held)
    for batch in (data.draw(st.permutations(first)), data.draw(st.permutations(rest))):
        if batch:
            results = ingest(factory, batch, require_size_schema=False)
            assert all(r.status == "stored" for r in results), results
    for events in lives:
        assert_projection(factory, events)
    everything = data.draw(st.permutations(first + rest))
    assert {r.status for r in ingest(factory, everything, require_size_schema=False)
            } == {"duplicate"}
    for events in lives:
        assert_projection(factory, events)


def test_each_event_in_its_own_batch_in_reverse(factory: sessionmaker[Session]) -> None:
    events = [
        make_event("vm-rev", 0, "create", 0, "p1", "active", 1),
        make_event("vm-rev", 1, "resize", 10, "p1", None, 2),
        make_event("vm-rev", 2, "power_off", 20, "p1", "shutoff", None),
        make_event("vm-rev", 3, "delete", 30, "", None, None),
        make_event("vm-rev", 4, "create", 40, "p2", "active", 4),
    ]
    for item in reversed(events):
        ingest(factory, [item], require_size_schema=False)
    assert_projection(factory, events)
    _, intervals = stored(factory, "vm-rev")
    assert [i[5] for i in intervals] == ["vm-rev-0", "vm-rev-1", "vm-rev-2", "vm-rev-4"]


def test_results_and_duplicates_inside_one_batch(factory: sessionmaker[Session]) -> None:
    one = make_event("vm-d", 0, "create", 0, "p1", "active", 1)
    results = ingest(factory, [one, dict(one), {"x": 1}], require_size_schema=False)
    assert results[:2] == [ItemResult(0, "vm-d-0", "stored"), ItemResult(1, "vm-d-0", "duplicate")]
    assert results[2].status == "rejected" and results[2].event_id is None
    assert results[2].reason is not None and results[2].reason.startswith("event_schema: ")


def test_concurrent_ingest_of_one_resource_stores_each_event_once(
    factory: sessionmaker[Session],
) -> None:
    events = [make_event("vm-c", n, kind, n * 10, "p1", "active", n % 3 + 1)
              for n, kind in enumerate(["create", "resize", "power_off", "resize", "delete",
                                        "create", "resize", "power_off"])]
    batches = [events[n::3] for n in range(3)] + [list(reversed(events))]
    outcomes: list[list[ItemResult]] = []
    errors: list[BaseException] = []

    def worker(batch: list[dict[str, Any]]) -> None:
        try:
            outcomes.append(ingest(factory, batch, require_size_schema=False))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(b,)) for b in batches * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    stored_ids = [r.event_id for results in outcomes for r in results if r.status == "stored"]
    assert sorted(stored_ids) == sorted(e["event_id"] for e in events)
    with factory() as session:
        assert session.scalar(sa.select(sa.func.count()).select_from(Event)) == len(events)
    assert_projection(factory, events)


def _floating_ip(n: int, event_type: str, offset: int, project: str) -> dict[str, Any]:
    return {
        "event_id": f"fip-owner-{n}", "event_type": event_type, "platform": "openstack",
        "cloud": "c1", "resource_type": "floating_ip", "resource_id": "fip-owner",
        "project_id": project,
        "timestamp": (T0 + dt.timedelta(seconds=offset)).isoformat() + "Z",
        "source": "collector", "payload": {"state": "active"} if n == 0 else {},
    }


@pytest.mark.parametrize("order", [(0, 1), (1, 0)], ids=["in-order", "delete-first"])
def test_a_delete_from_another_projects_context_keeps_the_owner(
        factory: sessionmaker[Session], order: tuple[int, int]) -> None:
    """neutron sends floatingip.delete.end from the deleter's context: an admin's
    project deleting a customer's floating IP.  Row and lifecycle stay the owner's."""
    events = [_floating_ip(0, "floatingip.create.end", 0, "p-owner"),
              _floating_ip(1, "floatingip.delete.end", 3600, "p-admin")]
    for n in order:
        (result,) = ingest(factory, [events[n]], require_size_schema=False)
        assert result.status == "stored", result
    key = ("openstack", "c1", "floating_ip", "fip-owner")
    with factory() as session:
        row = session.get(CurrentResource, key)
        assert row is not None
        assert (row.project_id, row.live) == ("p-owner", False)
        intervals = session.execute(
            sa.select(ResourceInterval.project_id, ResourceInterval.start, ResourceInterval.end)
            .where(ResourceInterval.resource_id == "fip-owner")).all()
    assert [tuple(i) for i in intervals] == [
        ("p-owner", T0, T0 + dt.timedelta(seconds=3600))]
