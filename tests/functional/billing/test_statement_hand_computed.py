"""One month's statements through the API, every amount computed by hand (SQLite and
PostgreSQL): every rate kind, a price change mid-month, a flavor without a rate, a
zero-rated project, a type and a state modifier, a resource that moves between
projects, and intervals crossing the period's start and end."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.models import SizeName
from tests.functional.billing.history import ACCEPT, SMALL, event, seed
from tests.functional.billing.history import statement_of as _statement
from tests.functional.reporting.fixtures import auth
from tests.unit.billing.test_rating import V1 as RATED_V1
from tests.unit.billing.test_rating import V2 as RATED_V2

ADMIN, READ = auth("admin"), auth("read")
SSD_ID = "9d3c7e4e-0000-4a57-8f0e-00000000ssd0"  # cinder's id of the volume type "ssd"

# The rates of tests/unit/billing/test_rating.py (m1.small 0.020; by resources
# vcpus 0.010, ram_gb 0.005, disk_gb 0.0001; volumes 0.00010 per GB-hour, ssd x 1.5;
# floating IPs 0.005; images 0.00005 per GB-hour; load balancers 0.030 + 0.005 a
# listener + 0.005 a pool; shutoff x 0.5; p-free zero-rated), in effect from September.
V1 = {**copy.deepcopy(RATED_V1), "effective_from": "2026-09-01T00:00:00Z"}
# From the 16th (RATED_V2): m1.small costs 0.030, and unnamed flavors are no longer
# rated by resources (so x.odd has no rate).
V2 = copy.deepcopy(RATED_V2)
CUSTOM = {"vcpus": 2, "ram_gb": 4, "disk_gb": 10, "flavor": "custom"}


def _month() -> list[dict[str, Any]]:
    def vol(kind: str, rid: str, at: str, **kw: Any) -> dict[str, Any]:
        return event(f"volume.{kind}.end", rid, at, resource_type="volume", **kw)

    return [
        # crosses the period's start: 2026-09-30 20:00 to 2026-10-01 04:00
        event("compute.instance.create.end", "inst-s", "2026-09-30T20:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-s", "2026-10-01T04:00:00Z", project_id=""),
        event("floatingip.create.end", "fip-a", "2026-10-01T00:00:00Z",
              resource_type="floating_ip", state="DOWN", size={"ip_version": 4}),
        event("floatingip.delete.end", "fip-a", "2026-10-11T00:00:00Z",
              resource_type="floating_ip", project_id=""),
        event("compute.instance.create.end", "inst-a", "2026-10-02T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.power_off.end", "inst-a", "2026-10-02T10:00:00Z",
              state="shutoff"),
        event("compute.instance.delete.end", "inst-a", "2026-10-03T00:00:00Z", project_id=""),
        # the type arrives as cinder's id; ingest names it through size names
        vol("create", "vol-a", "2026-10-03T00:00:00Z", state="available",
            size={"size_gb": 100, "type": SSD_ID}),
        vol("delete", "vol-a", "2026-10-04T00:00:00Z", project_id=""),
        event("image.create.end", "img-a", "2026-10-05T00:00:00Z", resource_type="image",
              state="active", size={"size_gb": 5}),
        event("image.delete.end", "img-a", "2026-10-09T04:00:00Z", resource_type="image",
              project_id=""),
        event("compute.instance.create.end", "inst-z", "2026-10-05T00:00:00Z",
              project_id="p-free", state="active", size=SMALL),
        event("compute.instance.delete.end", "inst-z", "2026-10-06T00:00:00Z", project_id=""),
        event("loadbalancer.create.end", "lb-a", "2026-10-06T00:00:00Z",
              resource_type="loadbalancer", state="ACTIVE", size={"listeners": 2, "pools": 3}),
        event("loadbalancer.delete.end", "lb-a", "2026-10-07T00:00:00Z",
              resource_type="loadbalancer", project_id=""),
        event("compute.instance.create.end", "inst-c", "2026-10-10T00:00:00Z",
              state="active", size=CUSTOM),
        event("compute.instance.delete.end", "inst-c", "2026-10-12T00:00:00Z", project_id=""),
        # across the price change, then moved to p2
        event("compute.instance.create.end", "inst-b", "2026-10-15T00:00:00Z",
              state="active", size=SMALL),
        event("compute.instance.update", "inst-b", "2026-10-17T00:00:00Z", project_id="p2"),
        event("compute.instance.delete.end", "inst-b", "2026-10-18T00:00:00Z", project_id=""),
        event("compute.instance.create.end", "inst-x", "2026-10-20T00:00:00Z",
              state="active", size={"vcpus": 8, "ram_gb": 1, "disk_gb": 1, "flavor": "x.odd"}),
        event("compute.instance.delete.end", "inst-x", "2026-10-20T10:00:00Z", project_id=""),
        # crosses the period's end, still live
        vol("create", "vol-b", "2026-10-31T12:00:00Z", state="available",
            size={"size_gb": 10, "type": "lvmdriver-1"}),
    ]


def _t(day: int, hour: int = 0, month: int = 10) -> str:
    return f"2026-{month:02d}-{day:02d}T{hour:02d}:00:00.000000Z"


def _rows(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(x["resource_type"], x["resource_id"], x["state"], x["start"], x["end"],
             x["quantity"], x["unit"], x["rate"], x["modifier"], x["price_list_version"],
             x["amount_unrounded"], x["amount"]) for x in body["lines"]]


def test_a_month_hand_computed(client: FlaskClient,
                               session_factory: sessionmaker[Session]) -> None:
    with session_factory.begin() as session:
        session.add(SizeName(platform="openstack", cloud="c1", kind="volume_type",
                             size_id=SSD_ID, name="ssd", updated_at=dt.datetime(2026, 9, 1)))
    for document in (V1, V2):
        assert client.put("/v1/price-lists/default", json=document, headers=ADMIN
                          ).status_code == 201
    seed(session_factory, _month())

    p1 = _statement(client, "p1")
    assert (p1["status"], p1["provisional"], p1["currency"]) == ("open", True, "EUR")
    assert _rows(p1) == [
        # 240 h x 0.005 = 1.20
        ("floating_ip", "fip-a", "DOWN", _t(1), _t(11), "240", "hour", "0.005", "1",
         "default/1", "1.2", "1.20"),
        # 5 GB x 100 h = 500 GB-h x 0.00005 = 0.025, half-even to 0.02
        ("image", "img-a", "active", _t(5), _t(9, 4), "500", "gb_hour", "0.00005", "1",
         "default/1", "0.025", "0.02"),
        # 10 h x 0.020 = 0.20; 14 h shut off x 0.020 x 0.5 = 0.14
        ("instance", "inst-a", "active", _t(2), _t(2, 10), "10", "hour", "0.020", "1",
         "default/1", "0.2", "0.20"),
        ("instance", "inst-a", "shutoff", _t(2, 10), _t(3), "14", "hour", "0.020", "0.5",
         "default/1", "0.14", "0.14"),
        # split at the price change: 24 h x 0.020 = 0.48, then 24 h x 0.030 = 0.72
        ("instance", "inst-b", "active", _t(15), _t(16), "24", "hour", "0.020", "1",
         "default/1", "0.48", "0.48"),
        ("instance", "inst-b", "active", _t(16), _t(17), "24", "hour", "0.030", "1",
         "default/2", "0.72", "0.72"),
        # by resources: 2 x 0.010 + 4 x 0.005 + 10 x 0.0001 = 0.0410 /h x 48 h = 1.968
        ("instance", "inst-c", "active", _t(10), _t(12), "48", "hour", "0.0410", "1",
         "default/1", "1.968", "1.97"),
        # clipped to the period's start: 4 h of 8 x 0.020 = 0.08
        ("instance", "inst-s", "active", _t(1), _t(1, 4), "4", "hour", "0.020", "1",
         "default/1", "0.08", "0.08"),
        # x.odd under default/2: no rate, no amount
        ("instance", "inst-x", "active", _t(20), _t(20, 10), "10", "hour", None, None,
         "default/2", None, None),
        # 0.030 + 2 listeners x 0.005 + 3 pools x 0.005 = 0.055 /h x 24 h = 1.32
        ("loadbalancer", "lb-a", "ACTIVE", _t(6), _t(7), "24", "hour", "0.055", "1",
         "default/1", "1.32", "1.32"),
        # 100 GB x 24 h = 2400 GB-h x 0.00010 x 1.5 (ssd, named from its id) = 0.36
        ("volume", "vol-a", "available", _t(3), _t(4), "2400", "gb_hour", "0.00010", "1.5",
         "default/1", "0.36", "0.36"),
        # clipped to the period's end: 12 h x 10 GB = 120 GB-h x 0.00010 (a type with
        # no modifier) = 0.012
        ("volume", "vol-b", "available", _t(31, 12), _t(1, 0, 11), "120", "gb_hour",
         "0.00010", "1", "default/2", "0.012", "0.01"),
    ]
    assert p1["lines"][10]["size"] == {"size_gb": 100, "type": "ssd"}
    assert p1["lines"][8]["unrated"] == "no rate for flavor x.odd in price list default/2"
    assert all(x["unrated"] is None for n, x in enumerate(p1["lines"]) if n != 8)
    # 1.20 + 0.02 + 0.20 + 0.14 + 0.48 + 0.72 + 1.97 + 0.08 + 1.32 + 0.36 + 0.01 = 6.50
    assert (p1["subtotal"], p1["adjustments_total"], p1["total"], p1["unrated_lines"]) == (
        "6.50", "0.00", "6.50", 1)

    # inst-b's day in p2 after the move: 24 h x 0.030 = 0.72
    p2 = _statement(client, "p2")
    assert _rows(p2) == [("instance", "inst-b", "active", _t(17), _t(18), "24", "hour",
                          "0.030", "1", "default/2", "0.72", "0.72")]
    assert p2["total"] == "0.72"
    # zero-rated: rated as usual, owes nothing
    free = _statement(client, "p-free")
    (line,) = free["lines"]
    assert (line["rate"], line["zero_rated"], line["amount_unrounded"], line["amount"]) == (
        "0.020", True, "0", "0.00")
    assert free["total"] == "0.00"
    # the other side of each boundary: September's 4 h of inst-s, November's 720 h of vol-b
    assert [(x["resource_id"], x["quantity"], x["amount"])
            for x in _statement(client, "p1", "2026-09")["lines"]] == [("inst-s", "4", "0.08")]
    november = _statement(client, "p1", "2026-11")
    # 10 GB x 720 h = 7200 GB-h x 0.00010 = 0.72
    assert [(x["resource_id"], x["start"], x["end"], x["quantity"], x["amount"])
            for x in november["lines"]] == [
        ("vol-b", _t(1, 0, 11), _t(1, 0, 12), "7200", "0.72")]

    summaries = client.get("/v1/statements?cloud=c1&period=2026-10", headers=READ).get_json()
    assert [(s["project_id"], s["subtotal"], s["total"], s["unrated_lines"])
            for s in summaries["items"]] == [
        ("p-free", "0.00", "0.00", 0), ("p1", "6.50", "6.50", 1), ("p2", "0.72", "0.72", 0)]

    # the close freezes exactly these lines and totals
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200
    frozen = _statement(client, "p1")
    assert frozen["status"] == "closed" and frozen["lines"] == p1["lines"]
    assert (frozen["subtotal"], frozen["total"], frozen["unrated_lines"]) == ("6.50", "6.50", 1)
