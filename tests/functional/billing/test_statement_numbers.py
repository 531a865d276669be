"""Closed statements are numbered per cloud: 1, 2, … gapless, in close order, given
in the close's transaction and never changed (SQLite and PostgreSQL); two closes
racing on PostgreSQL neither skip nor repeat a number."""

from __future__ import annotations

import concurrent.futures
import datetime as dt
from typing import Any

import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import closing, versions
from reporting.db import engine as db_engine
from reporting.db.billing_models import ClosedStatement
from tests.functional.billing.history import ACCEPT, ACCEPT_ALL, PRICES, SMALL, event, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")
NOW = dt.datetime(2026, 12, 15)


def _create(rid: str, when: str, project: str, cloud: str = "c1") -> dict[str, Any]:
    return event("compute.instance.create.end", rid, when, project_id=project, cloud=cloud,
                 state="active", size=SMALL)


def _numbers(factory: sessionmaker[Session], cloud: str) -> list[tuple[str, str, int | None]]:
    with factory() as session:
        return [tuple(r) for r in session.execute(  # type: ignore[misc]
            sa.select(ClosedStatement.period, ClosedStatement.project_id,
                      ClosedStatement.number)
            .where(ClosedStatement.cloud == cloud).order_by(ClosedStatement.number))]


def _summaries(client: FlaskClient, period: str, cloud: str = "c1") -> list[Any]:
    response = client.get(f"/v1/statements?cloud={cloud}&period={period}", headers=READ)
    assert response.status_code == 200, response.get_json()
    return [(item["project_id"], item["number"]) for item in response.get_json()["items"]]


def test_numbers_are_gapless_per_cloud_in_close_order_and_never_change(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document,
                          headers=ADMIN).status_code == 201
    seed(session_factory, [
        _create("a", "2026-09-02T00:00:00Z", "p2"), _create("b", "2026-09-03T00:00:00Z", "p1"),
        _create("c", "2026-10-05T00:00:00Z", "p3"),
        _create("x", "2026-09-02T00:00:00Z", "q1", cloud="c2"),
    ])
    assert _summaries(client, "2026-10") == [("p1", None), ("p2", None), ("p3", None)]
    for period, cloud in (("2026-09", "c1"), ("2026-09", "c2"), ("2026-10", "c1")):
        response = client.post(f"/v1/periods/{cloud}/{period}/close", headers=ADMIN,
                               json=ACCEPT)
        assert response.status_code in (200, 201), response.get_json()
    # a late fact about September: an adjustment on November, numbers unchanged
    seed(session_factory, [event("compute.instance.delete.end", "a", "2026-09-10T00:00:00Z",
                                 project_id="")])
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200  # closing again numbers nothing
    expected = [("2026-09", "p1", 1), ("2026-09", "p2", 2),
                ("2026-10", "p1", 3), ("2026-10", "p2", 4), ("2026-10", "p3", 5)]
    assert _numbers(session_factory, "c1") == expected
    assert _numbers(session_factory, "c2") == [("2026-09", "q1", 1)]
    assert _summaries(client, "2026-10") == [("p1", 3), ("p2", 4), ("p3", 5)]
    csv = client.get("/v1/statements?cloud=c1&period=2026-09",
                     headers={**READ, "Accept": "text/csv"}).get_data(as_text=True)
    assert csv.splitlines()[0].endswith(",unrated_lines,number")
    assert csv.splitlines()[1].startswith("p1,") and csv.splitlines()[1].endswith(",1")
    response = client.post("/v1/periods/c1/2026-11/close", headers=ADMIN, json=ACCEPT)
    assert response.status_code in (200, 201), response.get_json()
    assert _numbers(session_factory, "c1") == [*expected, ("2026-11", "p1", 6),
                                               ("2026-11", "p2", 7), ("2026-11", "p3", 8)]


def test_two_closes_racing_on_postgresql_number_without_gaps_or_duplicates(
    pg_migrated_database: str,
) -> None:
    engine = db_engine.make_engine(pg_migrated_database, pool_size=10, max_overflow=10)
    factory = db_engine.make_sessionmaker(engine)
    try:
        with factory() as session:
            for document in PRICES:
                versions.add(session, "default", document, "test", NOW)
            session.commit()
        seed(factory, [_create(f"r{n}", f"2026-{9 + n % 2:02d}-{1 + n % 28:02d}T00:00:00Z",
                               f"p{n % 7}") for n in range(60)])
        for _round in range(3):
            with concurrent.futures.ThreadPoolExecutor(2) as pool:
                closes = [pool.submit(closing.close, factory, "c1", period, "t", NOW, ACCEPT_ALL)
                          for period in ("2026-09", "2026-10")]
                results = [future.result(60) for future in closes]
            numbers = _numbers(factory, "c1")
            assert [n for _p, _j, n in numbers] == list(range(1, len(numbers) + 1))
            assert len(numbers) == 14 and all(r.created for r in results)
            first = min(numbers, key=lambda row: row[2])[0]
            # the close that committed first holds 1-7, the other 8-14
            assert {p for p, _j, n in numbers if n <= 7} == {first}
            with engine.begin() as conn:
                for table in ("billing_adjustments", "closed_statements", "closed_kinds",
                              "billing_periods"):
                    conn.execute(sa.text(f"DELETE FROM {table}"))  # noqa: S608
    finally:
        engine.dispose()
