"""A close an operator can trust (SQLite and PostgreSQL): unrated lines and a history
that began inside the period are refused unless accepted explicitly, and recorded; a
month wholly before the cloud's first observation is not billable; a price version
that omits ``zero_rated_projects`` carries the previous one's.

Amounts by hand, all at V1's m1.small rate of 0.020 an hour (V2's 0.030 from 10-16).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.billing_models import BillingPeriod, ClosedStatement
from reporting.db.models import SyncRun
from tests.functional.billing.history import PRICES, SMALL, event, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")
ODD = {"vcpus": 8, "ram_gb": 1, "disk_gb": 1, "flavor": "x.odd"}  # V2 rates no x.odd


def _prices(client: FlaskClient, *documents: dict[str, Any], name: str = "default") -> None:
    for document in documents:
        response = client.put(f"/v1/price-lists/{name}", json=document, headers=ADMIN)
        assert response.status_code == 201, response.get_json()


def _run(factory: sessionmaker[Session], cloud: str, at: dt.datetime, status: str = "completed",
         run_id: str = "run-1") -> None:
    with factory.begin() as session:
        session.add(SyncRun(id=run_id, cloud=cloud, status=status, started_at=at,
                            completed_at=at + dt.timedelta(minutes=5), stats={}))


def _close(client: FlaskClient, period: str = "2026-10", cloud: str = "c1",
           **accept: bool) -> Any:
    return client.post(f"/v1/periods/{cloud}/{period}/close", headers=ADMIN,
                       json=accept or None)


def _error(response: Any) -> tuple[int, str, str]:
    error = response.get_json()["error"]
    return response.status_code, error["code"], error["message"]


def _stored(factory: sessionmaker[Session], cloud: str = "c1") -> tuple[int, int]:
    with factory() as session:
        return (session.execute(sa.select(sa.func.count()).select_from(BillingPeriod)
                                .where(BillingPeriod.cloud == cloud)).scalar_one(),
                session.execute(sa.select(sa.func.count()).select_from(ClosedStatement)
                                .where(ClosedStatement.cloud == cloud)).scalar_one())


def _statement(client: FlaskClient, project: str, period: str = "2026-10",
               cloud: str = "c1") -> Any:
    return client.get(f"/v1/statements?cloud={cloud}&period={period}&project_id={project}",
                      headers=READ)


def test_unrated_lines_are_refused_unless_accepted_and_the_acceptance_is_recorded(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    _prices(client, *PRICES)
    _run(session_factory, "c1", dt.datetime(2026, 9, 30))  # observed since September
    seed(session_factory, [
        # p1: 10 h of m1.small at 0.020 = 0.20
        event("compute.instance.create.end", "inst-a", "2026-10-02T00:00:00Z", state="active",
              size=SMALL),
        event("compute.instance.delete.end", "inst-a", "2026-10-02T10:00:00Z", project_id=""),
        # p3: x.odd has no rate after the price change: 1 unrated line
        event("compute.instance.create.end", "inst-x", "2026-10-20T00:00:00Z", project_id="p3",
              state="active", size=ODD),
        event("compute.instance.delete.end", "inst-x", "2026-10-20T10:00:00Z", project_id=""),
    ])
    refused = _close(client)
    status, code, message = _error(refused)
    assert (status, code) == (409, "unrated_lines")
    assert "1 unrated line(s) in 1 project(s) (p3)" in message
    assert "accept_unrated_lines" in message
    assert _stored(session_factory) == (0, 0)  # nothing frozen, the month stays open
    listed = client.get("/v1/periods/c1", headers=READ).get_json()["items"]
    assert [(p["period"], p["status"]) for p in listed][-2:] == [
        ("2026-10", "open"), ("2026-09", "open")]
    # accepting the other condition is not accepting this one
    assert _error(_close(client, accept_partial_history=True))[1] == "unrated_lines"
    closed = _close(client, accept_unrated_lines=True)
    assert closed.status_code == 200, closed.get_json()
    body = closed.get_json()
    assert body["accepted_unrated_lines"] == 1
    assert body["accepted_partial_history_from"] is None  # began before October
    assert body["closed_by"].startswith("token:")  # who accepted: the closer
    assert _statement(client, "p1").get_json()["total"] == "0.20"
    assert _statement(client, "p3").get_json()["unrated_lines"] == 1
    listed = client.get("/v1/periods/c1", headers=READ).get_json()["items"]
    assert [(p["period"], p["accepted_unrated_lines"]) for p in listed
            if p["status"] == "closed"] == [("2026-10", 1)]


def test_a_month_without_unrated_lines_closes_without_accepting_anything(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    _prices(client, PRICES[0])
    # a collector heard c1 in September: October's history is whole
    seed(session_factory, [
        event("compute.instance.create.end", "inst-a", "2026-09-30T14:00:00Z", state="active",
              size=SMALL),
        event("compute.instance.delete.end", "inst-a", "2026-10-01T10:00:00Z", project_id=""),
    ])
    closed = _close(client)
    assert closed.status_code == 200, closed.get_json()
    assert (closed.get_json()["accepted_unrated_lines"],
            closed.get_json()["accepted_partial_history_from"]) == (None, None)
    assert _statement(client, "p1").get_json()["total"] == "0.20"  # 10 h x 0.020


def test_a_history_begun_inside_the_month_is_refused_unless_accepted(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    """Tally's first completed sync of c1 ran on 10-10: it dated the create of the
    instance it found back to 09-01 (the platform's creation instant), so September
    and the first days of October hold only a survivor."""
    _prices(client, PRICES[0])
    seed(session_factory, [
        {**event("compute.instance.create.end", "inst-s", "2026-09-01T00:00:00Z",
                 state="active", size=SMALL), "source": "reconciliation"},
        event("compute.instance.delete.end", "inst-s", "2026-10-12T00:00:00Z", project_id=""),
    ])
    _run(session_factory, "c1", dt.datetime(2026, 10, 10), status="failed", run_id="run-0")
    _run(session_factory, "c1", dt.datetime(2026, 10, 10, 6))  # the first completed one
    status, code, message = _error(_close(client))
    assert (status, code) == (409, "partial_history")
    assert "2026-10-10T06:00:00" in message and "first completed sync run" in message
    assert "accept_partial_history" in message
    assert _stored(session_factory) == (0, 0)
    assert _error(_close(client, accept_unrated_lines=True))[1] == "partial_history"
    # September is wholly before the first observation: never billable, whatever is
    # accepted (it would bill the survivor alone: 30 days x 24 h x 0.020 = 14.40)
    before = _close(client, "2026-09", accept_unrated_lines=True, accept_partial_history=True)
    status, code, message = _error(before)
    assert (status, code) == (409, "before_history")
    assert "begins at 2026-10-10T06:00:00" in message
    for query in ("project_id=p1&", ""):
        response = client.get(f"/v1/statements?cloud=c1&period=2026-09&{query}", headers=READ)
        assert _error(response)[:2] == (409, "before_history")
    names = [p["period"] for p in client.get("/v1/periods/c1", headers=READ).get_json()["items"]]
    assert names[-1] == "2026-10" and "2026-09" not in names
    closed = _close(client, accept_partial_history=True)
    assert closed.status_code == 200, closed.get_json()
    body = closed.get_json()
    assert body["accepted_partial_history_from"] == "2026-10-10T06:00:00.000000Z"
    assert body["accepted_unrated_lines"] is None
    # 11 days x 24 h = 264 h x 0.020 = 5.28, as accepted
    assert _statement(client, "p1").get_json()["total"] == "5.28"
    # a second close changes nothing, whatever it says
    again = _close(client).get_json()
    assert again == body


def test_a_collected_only_cloud_is_first_observed_by_its_first_notification(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    """c2 is never reconciled: its history begins at the first notification the
    collector heard (10-05); a reconciliation event dated earlier (none would exist
    without a run, but one replayed) does not move it."""
    _prices(client, PRICES[0])
    seed(session_factory, [
        {**event("compute.instance.create.end", "inst-r", "2026-08-01T00:00:00Z", cloud="c2",
                 state="active", size=SMALL), "source": "reconciliation"},
        event("compute.instance.create.end", "inst-c", "2026-10-05T00:00:00Z", cloud="c2",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-c", "2026-10-05T05:00:00Z", cloud="c2",
              project_id=""),
    ])
    status, code, message = _error(_close(client, cloud="c2"))
    assert (status, code) == (409, "partial_history")
    assert "2026-10-05T00:00:00" in message and "first notification the collector heard" in message
    assert _error(_statement(client, "p1", "2026-09", "c2"))[:2] == (409, "before_history")
    names = [p["period"] for p in client.get("/v1/periods/c2", headers=READ).get_json()["items"]]
    assert names[-1] == "2026-10"
    closed = _close(client, cloud="c2", accept_partial_history=True)
    assert closed.get_json()["accepted_partial_history_from"] == "2026-10-05T00:00:00.000000Z"
    # inst-r alive since 08-01, inst-c 5 h: (31 x 24 + 5) h x 0.020 = 749 x 0.020 = 14.98
    assert _statement(client, "p1", cloud="c2").get_json()["total"] == "14.98"
    # November began after the first observation: no acceptance needed
    assert _close(client, "2026-11", cloud="c2").status_code == 200


@pytest.mark.parametrize("body", [{"accept_unrated": True}, {"accept_unrated_lines": "yes"}])
def test_a_bad_acceptance_is_400_and_closes_nothing(
    client: FlaskClient, session_factory: sessionmaker[Session], body: dict[str, Any]
) -> None:
    _prices(client, PRICES[0])
    seed(session_factory, [event("compute.instance.create.end", "inst-a",
                                 "2026-09-02T00:00:00Z", state="active", size=SMALL)])
    response = client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=body)
    assert response.status_code == 400
    assert "accept_unrated_lines" in response.get_json()["error"]["message"]
    assert _stored(session_factory) == (0, 0)


def test_a_version_without_zero_rated_projects_carries_the_previous_ones(
    client: FlaskClient, session_factory: sessionmaker[Session]
) -> None:
    """V1 zero-rates p-free; a version from 10-16 that omits the member keeps p-free
    zero-rated, one from 10-21 with ``[]`` clears it.  inst-z of p-free runs 10-20
    00:00 to 10-22 00:00: 24 h zero-rated, then 24 h at 0.030 = 0.72."""
    omitting = {k: v for k, v in PRICES[1].items() if k != "zero_rated_projects"}
    _prices(client, PRICES[0], omitting)
    listed = client.get("/v1/price-lists/default", headers=READ).get_json()["items"]
    assert listed[1]["document"]["zero_rated_projects"] == ["p-free"]
    _prices(client, {**omitting, "effective_from": "2026-10-21T00:00:00Z",
                     "zero_rated_projects": []})
    listed = client.get("/v1/price-lists/default", headers=READ).get_json()["items"]
    assert listed[2]["document"]["zero_rated_projects"] == []
    seed(session_factory, [
        event("compute.instance.create.end", "inst-z", "2026-10-20T00:00:00Z",
              project_id="p-free", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-z", "2026-10-22T00:00:00Z", project_id=""),
    ])
    document = _statement(client, "p-free").get_json()
    assert [(line["zero_rated"], line["amount"]) for line in document["lines"]] == [
        (True, "0.00"), (False, "0.72")]
    assert document["total"] == "0.72"
    # a cloud's own first version carries what default zero-rated when it begins
    own = {k: v for k, v in PRICES[0].items() if k != "zero_rated_projects"}
    _prices(client, {**own, "effective_from": "2026-10-18T00:00:00Z"}, name="c3")
    (version,) = client.get("/v1/price-lists/c3", headers=READ).get_json()["items"]
    assert version["document"]["zero_rated_projects"] == ["p-free"]
