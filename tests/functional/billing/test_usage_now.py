"""``/v1/usage`` bills no time that has not happened, and any instant the API accepts
answers (no overflow far in the future)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from mapping.event import format_timestamp
from reporting.clock import utcnow
from tests.functional.billing.history import SMALL, event, seed
from tests.functional.reporting.fixtures import auth


def _usage(client: FlaskClient, start: str, end: str, group_by: str = "resource"
           ) -> dict[str, Any]:
    """Every page's items."""
    items: list[dict[str, Any]] = []
    query = {"from": start, "to": end, "group_by": group_by, "limit": "1000"}
    while True:
        response = client.get("/v1/usage", query_string=query, headers=auth("read"))
        assert response.status_code == 200, response.get_json()
        items.extend(response.get_json()["items"])
        if response.get_json()["next_marker"] is None:
            return {"items": items}
        query["marker"] = response.get_json()["next_marker"]


@pytest.fixture
def live(client: FlaskClient, session_factory: sessionmaker[Session]) -> dt.datetime:
    """One instance live since two hours ago (whole seconds), plus 300 that lived for
    the year 2000 and 200 live since year 1: their sum exceeds a 64-bit count of
    microseconds."""
    started = (utcnow() - dt.timedelta(hours=2)).replace(microsecond=0)
    items = [event("compute.instance.create.end", "live", format_timestamp(started),
                   state="active", size=SMALL)]
    for n in range(300):
        items += [event("compute.instance.create.end", f"old-{n}", "2000-01-01T00:00:00Z",
                        state="active", size=SMALL),
                  event("compute.instance.delete.end", f"old-{n}", "2001-01-01T00:00:00Z",
                        project_id="")]
    for n in range(200):
        items.append(event("compute.instance.create.end", f"ancient-{n}", "0001-01-01T00:00:00Z",
                           state="active", size=SMALL))
    seed(session_factory, items)
    return started


def test_an_open_interval_counts_up_to_now_not_to(client: FlaskClient, live: dt.datetime) -> None:
    before = utcnow()
    body = _usage(client, format_timestamp(live), "2999-01-01T00:00:00Z")
    after = utcnow()
    (item,) = [i for i in body["items"] if i["resource_id"] == "live"]
    assert (before - live).total_seconds() <= item["seconds"] <= (after - live).total_seconds()


@pytest.mark.parametrize("end", ["3000-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z"])
@pytest.mark.parametrize("group_by", ["resource", "project", "resource_type"])
def test_far_future_and_far_past_bounds_answer(client: FlaskClient, live: dt.datetime,
                                               end: str, group_by: str) -> None:
    body = _usage(client, "0001-01-01T00:00:00Z", end, group_by)
    total = sum(item["seconds"] for item in body["items"])
    year_2000 = (dt.datetime(2001, 1, 1) - dt.datetime(2000, 1, 1)).total_seconds()
    ancient = (live - dt.datetime(1, 1, 1)).total_seconds()
    assert total >= 300 * year_2000 + 200 * ancient
    assert total <= 300 * year_2000 + 201 * (utcnow() - dt.datetime(1, 1, 1)).total_seconds()
