"""Resource types that are not built in, priced through the API by the size member
their price list names (SQLite and PostgreSQL): a share per GiB-hour, a GPU server
family per GPU-hour with a state modifier, a type per hour alone; the statement, the
summaries (PostgreSQL: the set-based rating) and the close agree, hand-computed; a
type that is not registered, or whose schema has no such number, is refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import ACCEPT, event, seed
from tests.functional.reporting.fixtures import auth
from tests.unit.billing.test_sized_types import DNS_SCHEMA, GPU_SCHEMA, SHARE_SCHEMA, SIZED

ADMIN, READ = auth("admin"), auth("read")
PRICES = {**copy.deepcopy(SIZED), "effective_from": "2026-09-01T00:00:00Z"}


def register(client: FlaskClient, resource_type: str, schema: dict[str, Any]) -> None:
    response = client.put(f"/v1/resource-types/openstack/{resource_type}", headers=ADMIN,
                          json={"size_schema": schema})
    assert response.status_code in (200, 201), response.get_data(as_text=True)


def _month() -> list[dict[str, Any]]:
    def fact(rtype: str, verb: str, rid: str, at: str, **payload: Any) -> dict[str, Any]:
        return event(f"{rtype}.{verb}", rid, at, resource_type=rtype, **payload)

    size4 = {"gpus": 4, "flavor": "g1.4xa100"}
    return [
        fact("share", "create.end", "sh-a", "2026-10-02T00:00:00Z", state="available",
             size={"size_gb": 500}),
        fact("share", "delete.end", "sh-a", "2026-10-03T06:00:00Z", project_id=""),
        fact("gpu_server", "create.end", "gpu-a", "2026-10-02T00:00:00Z", state="active",
             size=size4),
        fact("gpu_server", "update", "gpu-a", "2026-10-02T10:00:00Z", state="shutoff"),
        fact("gpu_server", "delete.end", "gpu-a", "2026-10-02T15:00:00Z", project_id=""),
        fact("gpu_server", "create.end", "gpu-b", "2026-10-04T00:00:00Z", state="active",
             size={"gpus": 2, "flavor": "g1.2xa100"}, project_id="p2"),
        fact("gpu_server", "delete.end", "gpu-b", "2026-10-04T01:30:00Z", project_id=""),
        fact("dns_zone", "create.end", "zone-a", "2026-10-02T00:00:00Z", state="ACTIVE",
             size={"records": 40}),
        fact("dns_zone", "delete.end", "zone-a", "2026-10-03T00:00:00Z", project_id=""),
    ]


def _statement(client: FlaskClient, project: str) -> dict[str, Any]:
    response = client.get(f"/v1/statements?cloud=c1&period=2026-10&project_id={project}",
                          headers=READ)
    assert response.status_code == 200, response.get_data(as_text=True)
    return response.get_json()  # type: ignore[no-any-return]


def test_sized_types_are_billed_by_their_size_member(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    for name, schema in (("share", SHARE_SCHEMA), ("gpu_server", GPU_SCHEMA),
                         ("dns_zone", DNS_SCHEMA)):
        register(client, name, schema)
    assert client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN).status_code == 201
    seed(session_factory, _month())

    p1 = _statement(client, "p1")
    assert [(x["resource_type"], x["resource_id"], x["state"], x["quantity"], x["unit"],
             x["rate"], x["modifier"], x["amount_unrounded"], x["amount"])
            for x in p1["lines"]] == [
        # 24 h x 0.0011 = 0.0264 -> 0.03 (its size is not a factor)
        ("dns_zone", "zone-a", "ACTIVE", "24", "hour", "0.0011", "1", "0.0264", "0.03"),
        # 4 GPUs x 10 h = 40 GPU-h x 0.35 = 14.00; shut off 4 x 5 h = 20 x 0.35 x 0.1 = 0.70
        ("gpu_server", "gpu-a", "active", "40", "gpus_hour", "0.35", "1", "14", "14.00"),
        ("gpu_server", "gpu-a", "shutoff", "20", "gpus_hour", "0.35", "0.1", "0.7", "0.70"),
        # 500 GiB x 30 h = 15000 GiB-h x 0.00002 = 0.30
        ("share", "sh-a", "available", "15000", "size_gb_hour", "0.00002", "1", "0.3",
         "0.30"),
    ]
    assert (p1["subtotal"], p1["total"], p1["unrated_lines"]) == ("15.03", "15.03", 0)
    # 2 GPUs x 1.5 h = 3 GPU-h x 0.35 = 1.05
    assert _statement(client, "p2")["total"] == "1.05"

    summaries = client.get("/v1/statements?cloud=c1&period=2026-10", headers=READ).get_json()
    assert [(s["project_id"], s["subtotal"], s["unrated_lines"])
            for s in summaries["items"]] == [("p1", "15.03", 0), ("p2", "1.05", 0)]

    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN,
                       json=ACCEPT).status_code == 200
    frozen = _statement(client, "p1")
    assert frozen["status"] == "closed" and frozen["lines"] == p1["lines"]
    assert frozen["total"] == "15.03"
    closed = client.get("/v1/statements?cloud=c1&period=2026-10", headers=READ).get_json()
    assert [(s["project_id"], s["total"]) for s in closed["items"]] == [
        ("p1", "15.03"), ("p2", "1.05")]


def test_a_size_without_the_member_is_unrated_and_counted(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    # size_gb is a number where present, but not required
    register(client, "share", {"type": "object", "properties": {"size_gb": {"type": "number"}}})
    prices = {**PRICES, "rates": {"share": PRICES["rates"]["share"]}, "state_modifiers": {}}
    assert client.put("/v1/price-lists/default", json=prices, headers=ADMIN).status_code == 201
    seed(session_factory, [
        event("share.create.end", "sh-b", "2026-10-02T00:00:00Z", resource_type="share",
              state="available", size={"gigabytes": 5}),
        event("share.delete.end", "sh-b", "2026-10-03T00:00:00Z", resource_type="share",
              project_id="")])
    (line,) = _statement(client, "p1")["lines"]
    assert (line["unrated"], line["amount"], line["unit"]) == (
        "the size has no size_gb", None, "size_gb_hour")
    summaries = client.get("/v1/statements?cloud=c1&period=2026-10", headers=READ).get_json()
    assert [(s["project_id"], s["subtotal"], s["unrated_lines"])
            for s in summaries["items"]] == [("p1", "0.00", 1)]


@pytest.mark.parametrize(("registered", "reason"), [
    ({"gpu_server": GPU_SCHEMA, "dns_zone": DNS_SCHEMA},
     "rates.share: share is not a registered resource type (register its size schema with "
     "PUT /v1/resource-types/{platform}/share first)"),
    ({"share": {"type": "object", "properties": {"size_gb": {"type": "string"}}},
      "gpu_server": GPU_SCHEMA, "dns_zone": DNS_SCHEMA},
     "rates.share.size: no size schema registered for share (openstack/share) declares a "
     "numeric member 'size_gb'"),
])
def test_a_type_nobody_registered_with_that_number_is_refused(
        client: FlaskClient, registered: dict[str, Any], reason: str) -> None:
    for name, schema in registered.items():
        register(client, name, schema)
    response = client.put("/v1/price-lists/default", json=PRICES, headers=ADMIN)
    assert response.status_code == 400
    error = response.get_json()["error"]
    assert (error["code"], error["message"]) == ("invalid_price_list", reason)
    assert client.get("/v1/price-lists/default", headers=READ).get_json()["items"] == []
