"""A small October 2026 on cloud c1, with its price lists and hand-computed amounts."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import sqlalchemy as sa
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing.closing import Acceptance
from reporting.ingest import ingest
from tests.unit.billing.test_rating import V1, V2
from tests.unit.reporting.fixtures import auth

# The tables a history writes on PostgreSQL.  The event ids' table of the partitioned
# history is among them: an id left there makes the next history's event a duplicate.
HISTORY_TABLES = ("events", "tally_history.event_ids", "current_resources",
                  "resource_intervals")


def empty_history(session: Session, *more: str) -> None:
    """Truncate the history's tables and ``more`` (PostgreSQL), committed."""
    session.execute(sa.text(f"TRUNCATE {', '.join((*HISTORY_TABLES, *more))}"))
    session.commit()


_ids = itertools.count(1)
SMALL = {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
SSD100 = {"size_gb": 100, "type": "ssd"}
PRICES = [copy.deepcopy(V1), copy.deepcopy(V2)]
# The histories of these tests begin inside the month they close (their first
# notification is dated after its start, no sync run observed them before) and may
# hold lines nothing prices (p3's): a close of them accepts both explicitly, as an
# operator would (the refusals are tested in test_close_acceptance.py).
ACCEPT = {"accept_unrated_lines": True, "accept_partial_history": True}
ACCEPT_ALL = Acceptance(unrated_lines=True, partial_history=True)


def event(event_type: str, resource_id: str, timestamp: str, *, resource_type: str = "instance",
          project_id: str = "p1", cloud: str = "c1", **payload: Any) -> dict[str, Any]:
    return {
        "event_id": f"bev-{next(_ids):05d}", "event_type": event_type, "platform": "openstack",
        "cloud": cloud, "resource_type": resource_type, "resource_id": resource_id,
        "project_id": project_id, "timestamp": timestamp, "source": "collector",
        "payload": payload,
    }


def october() -> list[dict[str, Any]]:
    """p1: inst-a 10 h active (0.20) + 14 h shutoff at half rate (0.14); vol-a one day of
    100 GB ssd (0.36); inst-b from 10-15 to 10-17 across the price change (0.48 + 0.72),
    then moved to p2 for a day (0.72).  p-free: inst-z, zero-rated.  p3: a flavor with
    no rate after the price change (unrated).  Total p1 = 1.90."""
    return [
        event("compute.instance.create.end", "inst-a", "2026-10-02T00:00:00Z", state="active",
              size=SMALL),
        event("compute.instance.power_off.end", "inst-a", "2026-10-02T10:00:00Z",
              state="shutoff"),
        event("compute.instance.delete.end", "inst-a", "2026-10-03T00:00:00Z", project_id=""),
        event("volume.create.end", "vol-a", "2026-10-03T00:00:00Z", resource_type="volume",
              state="available", size=SSD100),
        event("volume.delete.end", "vol-a", "2026-10-04T00:00:00Z", resource_type="volume",
              project_id=""),
        event("compute.instance.create.end", "inst-b", "2026-10-15T00:00:00Z", state="active",
              size=SMALL),
        event("compute.instance.update", "inst-b", "2026-10-17T00:00:00Z", project_id="p2"),
        event("compute.instance.delete.end", "inst-b", "2026-10-18T00:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-z", "2026-10-05T00:00:00Z",
              project_id="p-free", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-z", "2026-10-06T00:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-x", "2026-10-20T00:00:00Z", project_id="p3",
              state="active", size={"vcpus": 8, "ram_gb": 1, "disk_gb": 1, "flavor": "x.odd"}),
        event("compute.instance.delete.end", "inst-x", "2026-10-20T10:00:00Z", project_id=""),
    ]


def seed(factory: sessionmaker[Session], items: list[dict[str, Any]]) -> None:
    results = ingest(factory, items, require_size_schema=False)
    bad = [(r.index, r.status, r.reason) for r in results if r.status != "stored"]
    assert not bad, bad


def statement_of(client: FlaskClient, project: str, period: str = "2026-10") -> dict[str, Any]:
    """Project ``project``'s statement of ``period`` on cloud c1, as read sees it."""
    response = client.get(f"/v1/statements?cloud=c1&period={period}&project_id={project}",
                          headers=auth("read"))
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def summaries_of(client: FlaskClient, period: str = "2026-10") -> list[tuple[str, str, str]]:
    """(project, subtotal, total) of every summary of ``period`` on cloud c1."""
    body = client.get(f"/v1/statements?cloud=c1&period={period}",
                      headers=auth("read")).get_json()
    return [(s["project_id"], s["subtotal"], s["total"]) for s in body["items"]]
