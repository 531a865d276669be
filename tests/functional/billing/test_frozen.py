"""A closed statement is answered as the pure rating renders the statement of the
facts up to its cutoff, byte for byte, whichever way it was frozen: set-based on
PostgreSQL (``sql_close``) or in Python (``frozen.freeze_in_python``, SQLite's), on
random histories with decimal sizes, unicode and escaped ids, null states and sizes,
every rate kind (a sized type's too), a zero-rated project and a price change inside the month."""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import closing, frozen, periods, rating, service, statements, versions
from reporting.db import engine as db_engine
from reporting.db.billing_models import ClosedKind, ClosedStatement
from reporting.db.models import SyncRun
from reporting.fold import Interval
from tests.functional.billing.history import ACCEPT_ALL, empty_history, event, seed
from tests.functional.billing.test_close_property import SIZED_PRICES, register_share

NOW = dt.datetime(2026, 12, 15)
PERIOD = "2026-10"
# Ids a JSON text must escape, or that sort apart in code points and collations.
IDS = ["a", "B", "é", "ö-1", "✓", "日本", "🙂", 'q"uote', "back\\slash", "new\nline",
       "tab\t", "ctl\x01", "sep\u2028", "z" * 40]
SIZES: dict[str, list[Any]] = {
    "instance": [{"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"},
                 {"vcpus": 2, "ram_gb": 0.5, "disk_gb": 0.3, "flavor": "custom"},
                 {"vcpus": 3, "ram_gb": 1e-7, "disk_gb": 33.333, "flavor": "x.odd"}, None],
    "volume": [{"size_gb": 100, "type": "ssd"}, {"size_gb": 0.123456789, "type": "hdd"},
               {"size_gb": 1e-7, "type": "ssd"}, None],
    "image": [{"size_gb": 2.5}, {"size_gb": 33.333}, None],
    "floating_ip": [{"ip_version": 4}, None],
    "loadbalancer": [{"listeners": 2, "pools": 3}, {"listeners": 0, "pools": 1}],
    # a sized type: priced by the member size_gb (the last has none: unrated)
    "share": [{"size_gb": 12}, {"size_gb": 0.123456789}, {"gigabytes": 3}, None],
    "router": [None],  # no rate in any version: unrated
}
STATES = ["active", "shutoff", "ACTIVE", "", None]
PROJECTS = ["p1", "p-free", "projé", 'p"2']
TYPES = {"instance": "compute.instance", "volume": "volume", "image": "image",
         "floating_ip": "floatingip", "loadbalancer": "loadbalancer", "share": "share", "router": "router"}


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    items = []
    start = dt.datetime(2026, 9, 25)
    for number in range(draw(st.integers(1, 6))):
        rtype = draw(st.sampled_from(sorted(SIZES)))
        rid = draw(st.sampled_from(IDS)) + f"-{number}"
        prefix = TYPES[rtype]
        when = start + dt.timedelta(seconds=draw(st.integers(0, 40 * 86400)),
                                    microseconds=draw(st.integers(0, 999_999)))
        project = draw(st.sampled_from(PROJECTS))
        payload: dict[str, Any] = {}
        size = draw(st.sampled_from(SIZES[rtype]))
        if size is not None:
            payload["size"] = size
        state = draw(st.sampled_from(STATES))
        if state is not None:
            payload["state"] = state
        items.append(event(f"{prefix}.create.end", rid, _stamp(when), resource_type=rtype,
                           project_id=project, **payload))
        for _ in range(draw(st.integers(0, 4))):
            when += dt.timedelta(seconds=draw(st.integers(1, 12 * 86400)),
                                 microseconds=draw(st.integers(0, 999_999)))
            change = draw(st.sampled_from(["state", "move", "size", "delete"]))
            if change == "delete":
                items.append(event(f"{prefix}.delete.end", rid, _stamp(when),
                                   resource_type=rtype, project_id=""))
                break
            extra: dict[str, Any] = {}
            if change == "state":
                extra["state"] = draw(st.sampled_from([s for s in STATES if s is not None]))
            elif change == "size" and any(SIZES[rtype]):
                extra["size"] = draw(st.sampled_from([s for s in SIZES[rtype] if s]))
            items.append(event(f"{prefix}.update", rid, _stamp(when), resource_type=rtype,
                               project_id=draw(st.sampled_from(PROJECTS)) if change == "move"
                               else project, **extra))
    return items


def _stamp(moment: dt.datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def expected_texts(session: Session, closed_at: dt.datetime) -> dict[str, str]:
    """Every project's statement of the period as the pure rating renders it."""
    start, end = periods.parse(PERIOD)
    timeline = versions.timeline(session, "c1")
    by_project: dict[str, list[rating.Line]] = {}
    for line in rating.rate_intervals(statements.intervals(session, "c1", start, end),
                                      timeline, start, end, NOW):
        by_project.setdefault(line.project_id, []).append(line)
    return {
        project: statements.text(statements.document(
            cloud="c1", project_id=project, period=PERIOD,
            currency_code=statements.currency(timeline, end), closed=True,
            computed_at=closed_at, lines=lines, adjustments=[]))
        for project, lines in by_project.items()
    }


def answered(session: Session) -> dict[str, str]:
    rows = session.execute(sa.select(ClosedStatement.project_id).where(
        ClosedStatement.cloud == "c1", ClosedStatement.period == PERIOD)).scalars()
    return {project: service.statement_text(session, "c1", project, PERIOD, NOW)
            for project in rows}


def _prices(factory: sessionmaker[Session]) -> None:
    with factory() as session:
        # Observed since before the histories' first instant: a history whose every
        # event falls after October would otherwise make October unbillable
        # (test_close_acceptance.py tests that).
        session.add(SyncRun(id="run-0", cloud="c1", status="completed",
                            started_at=dt.datetime(2026, 9, 24),
                            completed_at=dt.datetime(2026, 9, 24, 0, 5), stats={}))
        register_share(session)
        for document in SIZED_PRICES:
            versions.add(session, "default", document, "test", NOW)
        session.commit()


@pytest.fixture
def pg(pg_migrated_database: str) -> Any:
    engine = db_engine.make_engine(pg_migrated_database)
    factory = db_engine.make_sessionmaker(engine)
    _prices(factory)
    yield factory
    engine.dispose()


def test_both_freezes_answer_the_pure_rating_bytes(pg: sessionmaker[Session]) -> None:
    @given(history=histories())
    @settings(max_examples=30, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(history: list[dict[str, Any]]) -> None:
        with pg() as session:
            empty_history(session, "billing_periods", "closed_statements", "closed_kinds")
        seed(pg, history)
        with pg() as session:
            # Python's freeze (SQLite's path) on the same rows, rendered, then undone
            totals = frozen.freeze_in_python(session, "c1", PERIOD,
                                             versions.timeline(session, "c1"), NOW)
            in_python = {}
            for project in totals:
                row = session.get(ClosedStatement, ("c1", PERIOD, project))
                assert row is not None
                in_python[project] = ",".join(
                    statements.text(line.as_dict()) for line in frozen.lines(session, row))
            session.rollback()
        result = closing.close(pg, "c1", PERIOD, "test", NOW, ACCEPT_ALL)
        with pg() as session:
            expected = expected_texts(session, result.period.closed_at)
            assert answered(session) == expected
            for project, text in expected.items():
                assert json.dumps(json.loads(text)["lines"], separators=(",", ":"),
                                  ensure_ascii=False) == f"[{in_python[project]}]"
            assert set(in_python) == set(expected)

    run()


def test_python_freeze_on_sqlite(tmp_path: Path, sqlite_migrated_template: Path) -> None:
    template = sqlite_migrated_template  # copied per example, never written
    runs = iter(range(1_000_000))

    @given(history=histories())
    @settings(max_examples=20, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    def run(history: list[dict[str, Any]]) -> None:
        path = tmp_path / f"run-{next(runs)}.sqlite"
        shutil.copy(template, path)
        engine = db_engine.make_engine(f"sqlite:///{path}")
        factory = db_engine.make_sessionmaker(engine)
        try:
            _prices(factory)
            seed(factory, history)
            result = closing.close(factory, "c1", PERIOD, "test", NOW, ACCEPT_ALL)
            with factory() as session:
                assert answered(session) == expected_texts(session, result.period.closed_at)
        finally:
            engine.dispose()
            path.unlink()

    run()


# A frozen statement as stored, and the exact text it must be answered as: if this
# changes, every statement frozen before the change would be answered differently.
GOLDEN_KINDS = [
    {"kind": 1, "resource_type": "instance", "state": "shutoff",
     "size": '{"vcpus":1,"flavor":"m1.small"}', "price_list_version": "default/1",
     "unit": "hour", "rate": "0.020", "modifier": "0.5", "factor": "1", "per_hour": "0.01",
     "unrated": None},
    {"kind": 2, "resource_type": "volume", "state": None, "size": '{"size_gb":0.123456789}',
     "price_list_version": "default/2", "unit": "gb_hour", "rate": "0.00010",
     "modifier": "1.5", "factor": "0.123456789", "per_hour": "0.0000185185183500",
     "unrated": None},
    {"kind": 3, "resource_type": "image", "state": "", "size": "null",
     "price_list_version": None, "unit": "gb_hour", "rate": None, "modifier": None,
     "factor": None, "per_hour": None, "unrated": "no price list in effect"},
]
GOLDEN_ROW = {
    "project_id": "pé", "body": '{"cloud":"c1","project_id":"pé","lines":[],"total":"x"}',
    "subtotal": "0.01", "adjustments_total": "0.00", "total": "0.01", "unrated_lines": 1,
    "line_resource_ids": ["vol\n1", "i\"1", "img"],
    "line_starts": [86_400_000_000, 0, 1], "line_lengths": [3_600_000_001, 1_000_000, 7],
    "line_event_ids": ["ev-2", "ev-1", "ev-✓"], "line_kinds": [5, 2, 6],
}
GOLDEN = (
    '{"cloud":"c1","project_id":"pé","lines":['
    '{"resource_type":"image","resource_id":"img","state":"","size":null,'
    '"start":"2026-10-01T00:00:00.000001Z","end":"2026-10-01T00:00:00.000008Z",'
    '"event_id":"ev-✓","price_list_version":null,"quantity":"0.000000001944",'
    '"unit":"gb_hour","rate":null,"modifier":null,"zero_rated":false,'
    '"amount_unrounded":null,"amount":null,"unrated":"no price list in effect"},'
    '{"resource_type":"instance","resource_id":"i\\"1","state":"shutoff",'
    '"size":{"vcpus":1,"flavor":"m1.small"},"start":"2026-10-01T00:00:00.000000Z",'
    '"end":"2026-10-01T00:00:01.000000Z","event_id":"ev-1",'
    '"price_list_version":"default/1","quantity":"0.000277777778","unit":"hour",'
    '"rate":"0.020","modifier":"0.5","zero_rated":false,'
    '"amount_unrounded":"0.000002777778","amount":"0.00","unrated":null},'
    '{"resource_type":"volume","resource_id":"vol\\n1","state":null,'
    '"size":{"size_gb":0.123456789},"start":"2026-10-02T00:00:00.000000Z",'
    '"end":"2026-10-02T01:00:00.000001Z","event_id":"ev-2",'
    '"price_list_version":"default/2","quantity":"0.123456789034","unit":"gb_hour",'
    '"rate":"0.00010","modifier":"1.5","zero_rated":true,"amount_unrounded":"0",'
    '"amount":"0.00","unrated":null}],"total":"x"}'
)


def test_a_frozen_statement_is_answered_as_ever(session_factory: sessionmaker[Session]) -> None:
    with session_factory() as session:
        session.execute(sa.insert(ClosedKind), [
            {"cloud": "c1", "period": PERIOD, **kind} for kind in GOLDEN_KINDS])
        body = str(GOLDEN_ROW["body"])
        session.execute(sa.insert(ClosedStatement), [{
            "cloud": "c1", "period": PERIOD, **GOLDEN_ROW,
            "lines_at": body.index('"lines":[') + len('"lines":[')}])
        session.commit()
        row = session.get(ClosedStatement, ("c1", PERIOD, "pé"))
        assert row is not None
        assert frozen.text(session, row) == GOLDEN
        # a statement frozen whole before revision 0012 is answered as stored
        row.lines_at = None
        assert frozen.text(session, row) == GOLDEN_ROW["body"]


def test_the_envelope_takes_the_lines_where_the_document_has_them() -> None:
    line = rating.line_of("instance", 'i"1', Interval(
        dt.datetime(2026, 10, 1), dt.datetime(2026, 10, 2), '"lines":[', None, None, "e"),
        dt.datetime(2026, 10, 1), dt.datetime(2026, 10, 2), None, "hour",
        rating.price_of("instance", None, None, None), False, 2)
    for project in ['"lines":[', "p", "p\\", "é"]:
        document = statements.document(
            cloud="c1", project_id=project, period=PERIOD, currency_code=None, closed=True,
            computed_at=NOW, lines=[line, line], adjustments=[])
        empty = statements.document(
            cloud="c1", project_id=project, period=PERIOD, currency_code=None, closed=True,
            computed_at=NOW, lines=[], adjustments=[], frozen=(rating.subtotal([line]), 2))
        body, at = statements.envelope(empty)
        rendered = statements.text(line.as_dict())
        assert body[:at] + rendered + "," + rendered + body[at:] == statements.text(document)
