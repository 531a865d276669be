"""For any history and any arrival order, split anywhere by closes: every frozen
statement stays byte for byte what it was, it is the statement of the facts received
up to its cutoff, and frozen + booked + pending adjustments = the recomputed truth."""

from __future__ import annotations

import collections
import datetime as dt
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import adjustments, closing, statements, versions
from reporting.db import engine as db_engine
from reporting.db import migrations
from tests.functional.billing import truth
from tests.functional.billing.history import PRICES, event, seed

NOW = dt.datetime(2026, 12, 15)
START = dt.datetime(2026, 9, 28)
SIZES = [{"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"},
         {"vcpus": 2, "ram_gb": 4, "disk_gb": 10, "flavor": "custom"}]


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    items = []
    for number in range(draw(st.integers(1, 4))):
        rid = f"r{number}"
        home = draw(st.sampled_from(["p1", "p2", "p-free"]))
        for _ in range(draw(st.integers(1, 6))):
            when = START + dt.timedelta(hours=draw(st.integers(0, 24 * 45)))
            stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
            kind = draw(st.sampled_from(["create", "state", "move", "resize", "delete"]))
            project = draw(st.sampled_from(["p1", "p2", "p-free"]))
            if kind == "create":
                items.append(event("compute.instance.create.end", rid, stamp, project_id=project,
                                   state="active", size=draw(st.sampled_from(SIZES))))
            elif kind == "state":
                items.append(event("compute.instance.update", rid, stamp, project_id=home,
                                   state=draw(st.sampled_from(["active", "shutoff"]))))
            elif kind == "move":
                items.append(event("compute.instance.update", rid, stamp, project_id=project))
            elif kind == "resize":
                items.append(event("compute.instance.update", rid, stamp, project_id=home,
                                   size=draw(st.sampled_from(SIZES))))
            else:
                items.append(event("compute.instance.delete.end", rid, stamp, project_id=""))
    return draw(st.permutations(items))


def _check(factory: sessionmaker[Session], frozen_before: dict[str, dict[str, Any]]) -> None:
    with factory() as session:
        closed = statements.closed_periods(session, "c1")
        timeline = versions.timeline(session, "c1")
        pending: dict[str, dict[str, Decimal]] = collections.defaultdict(
            lambda: collections.defaultdict(lambda: Decimal(0)))
        for adjustment in adjustments.pending(session, "c1", "2026-12", closed, timeline, NOW):
            pending[adjustment.source_period][adjustment.project_id] += adjustment.amount
        for period, row in closed.items():
            frozen = truth.frozen(session, "c1", period)
            assert {p: body for p, (_s, body) in frozen.items()} == frozen_before[period]
            at_cutoff = truth.recomputed(session, "c1", period, NOW, row.cutoff_seq)
            assert truth.nonzero({p: s for p, (s, _b) in frozen.items()}) == truth.nonzero(
                at_cutoff)
            whole = truth.recomputed(session, "c1", period, NOW)
            booked = truth.booked(session, "c1", period)
            projects = set(whole) | set(frozen) | set(booked) | set(pending[period])
            assert truth.nonzero({
                p: (frozen[p][0] if p in frozen else Decimal(0)) + booked.get(p, Decimal(0))
                + pending[period][p]
                for p in projects
            }) == truth.nonzero(whole)


def test_frozen_plus_adjustments_is_the_truth(tmp_path: Path) -> None:
    template = tmp_path / "template.sqlite"
    migrations.upgrade(f"sqlite:///{template}")
    runs = iter(range(1_000_000))

    @given(history=histories(), data=st.data())
    @settings(max_examples=60, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(history: list[dict[str, Any]], data: st.DataObject) -> None:
        path = tmp_path / f"run-{next(runs)}.sqlite"
        shutil.copy(template, path)
        engine = db_engine.make_engine(f"sqlite:///{path}")
        factory = db_engine.make_sessionmaker(engine)
        try:
            with factory() as session:
                for document in PRICES:
                    versions.add(session, "default", document, "test", NOW)
                session.commit()
            first = data.draw(st.integers(0, len(history)))
            second = data.draw(st.integers(first, len(history)))
            frozen_before: dict[str, dict[str, Any]] = {}
            for chunk, period in ((history[:first], "2026-10"), (history[first:second], "2026-11")):
                if chunk:
                    seed(factory, chunk)
                closing.close(factory, "c1", period, "test", NOW)
                with factory() as session:
                    frozen_before[period] = {
                        p: body for p, (_s, body) in truth.frozen(session, "c1", period).items()}
                _check(factory, frozen_before)
            if history[second:]:
                seed(factory, history[second:])
            _check(factory, frozen_before)
        finally:
            engine.dispose()
            path.unlink()


    run()
