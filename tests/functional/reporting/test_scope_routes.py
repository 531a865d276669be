"""Every GET route under /v1 has a project-scope decision, and keeps it (SQLite and
PostgreSQL, auth_strategy=token; the scope is decided on the caller whatever the
strategy).

``DECISIONS`` holds, for each rule of the app's url_map, probes of what a project
reader of p1 gets there. A route the table does not name (a new query endpoint)
fails :func:`test_every_v1_get_route_has_a_scope_decision` until someone decides
what a project reader sees there (docs/reporting-queries.md, "Project scope") and
probes it. Whatever the decision, a project reader's answer never holds another
project's id.

Data: query_fixtures.seeded_history on cloud c1 (p1 and p2), the billing history
of October 2026 on cloud c3 (p1, p2, p3, p-free) priced by the default list.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from flask import Flask
from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from reporting.db.session import SESSIONMAKER_KEY
from tests.functional.billing import history
from tests.functional.billing.history import ACCEPT
from tests.functional.reporting import query_fixtures
from tests.functional.reporting.fixtures import ConfFactory, auth, project_readers_app
from tests.functional.reporting.query_fixtures import assert_contract, at

P1 = {"Authorization": "Bearer tok-p1"}
READ, ADMIN = auth("read"), auth("admin")

# What a project reader of p1 gets from a probe:
FILTERED = "filtered"      # 200, p1's rows only, where read's answer holds p2's
OWN = "own"                # 200, the same answer as read's (p1's own data)
HIDDEN = "hidden"          # 404, exactly like a resource that does not exist (read: 200)
CLOUD_WIDE = "cloud-wide"  # 200, the same answer as read's (no project data in it)
# 200, read's answer without who did it (created_by, closed_by: null)
WITHOUT_WHO = "cloud-wide without who"
# 200, exactly the answer for a cloud that does not exist (read: another answer): a
# cloud p1 has no history in, whose name a project reader may not learn
AS_UNKNOWN = "as unknown"
UNKNOWN_CLOUD = "no-such-cloud"
REFUSED = "refused"        # 403 (read: 200)
ADMIN_ONLY = "admin only"  # 403, and to read too (admin: 200)
OPEN = "open"              # 200 without any credentials

RESOURCE = "/v1/resources/openstack/c1/instance/{}"
USAGE = f"/v1/usage?from={at(0)}&to={at(3)}"
STATEMENTS = "/v1/statements?cloud=c3&period=2026-10"
RESOURCE_RULE = "/v1/resources/<platform>/<cloud>/<resource_type>/<resource_id>"

DECISIONS: dict[str, list[tuple[str, str]]] = {
    "/v1/openapi.json": [(OPEN, "/v1/openapi.json")],
    "/v1/resources": [(FILTERED, "/v1/resources"),
                      (FILTERED, f"/v1/resources?as_of={at(1)}"),
                      (REFUSED, "/v1/resources?project_id=p2")],
    RESOURCE_RULE: [(OWN, RESOURCE.format("inst-a")), (HIDDEN, RESOURCE.format("inst-e"))],
    RESOURCE_RULE + "/events": [(OWN, RESOURCE.format("inst-a") + "/events"),
                                (HIDDEN, RESOURCE.format("inst-e") + "/events")],
    RESOURCE_RULE + "/lifecycle": [(OWN, RESOURCE.format("inst-a") + "/lifecycle"),
                                   (HIDDEN, RESOURCE.format("inst-e") + "/lifecycle")],
    "/v1/usage": [(FILTERED, USAGE), (FILTERED, USAGE + "&group_by=project"),
                  (REFUSED, USAGE + "&project_id=p2")],
    "/v1/statements": [(FILTERED, STATEMENTS), (OWN, STATEMENTS + "&project_id=p1"),
                       (REFUSED, STATEMENTS + "&project_id=p2"),
                       (AS_UNKNOWN, "/v1/statements?cloud=c4&period=2026-10&project_id=p1"),
                       (AS_UNKNOWN, "/v1/statements?cloud=c4&period=2026-10")],
    "/v1/price-lists/<cloud>": [(WITHOUT_WHO, "/v1/price-lists/default"),
                                (AS_UNKNOWN, "/v1/price-lists/c4")],
    "/v1/periods/<cloud>": [(WITHOUT_WHO, "/v1/periods/c3"), (AS_UNKNOWN, "/v1/periods/c4")],
    # Cloud names and every cloud's resource count: cloud-wide.
    "/v1/clouds": [(REFUSED, "/v1/clouds")],
    "/v1/rejected-events": [(REFUSED, "/v1/rejected-events")],
    "/v1/resource-types": [(REFUSED, "/v1/resource-types")],
    "/v1/resource-types/<platform>/<resource_type>": [
        (REFUSED, "/v1/resource-types/openstack/instance")],
    "/v1/sync-runs": [(REFUSED, "/v1/sync-runs")],
    # Accounts group projects: read only (a project reads its own statement).
    "/v1/accounts": [(REFUSED, "/v1/accounts")],
    "/v1/account-summaries": [(REFUSED, "/v1/account-summaries?period=2026-10")],
    "/v1/periods/<cloud>/<period>/export": [
        (REFUSED, "/v1/periods/c3/2026-10/export?format=json")],
    "/v1/periods/<cloud>/<period>/deliveries": [
        (ADMIN_ONLY, "/v1/periods/c3/2026-10/deliveries")],
    "/v1/accounts/<account_id>": [(REFUSED, "/v1/accounts/acme")],
    "/v1/accounts/<account_id>/statement": [(REFUSED, "/v1/accounts/acme/statement?period=2026-10")],
    "/v1/accounts/<account_id>/lines": [(REFUSED, "/v1/accounts/acme/lines")],
    "/v1/accounts/<account_id>/commitments": [(REFUSED, "/v1/accounts/acme/commitments")],
    "/v1/accounts/<account_id>/discounts": [(REFUSED, "/v1/accounts/acme/discounts")],
}
PROBES = [(rule, kind, url) for rule, probes in DECISIONS.items() for kind, url in probes]


@pytest.fixture
def scoped_app(make_conf: ConfFactory, db_url: str, tmp_path: Path) -> Iterator[Flask]:
    with project_readers_app(make_conf, db_url, tmp_path, ("p1",)) as app:
        yield app


@pytest.fixture
def client(scoped_app: Flask) -> FlaskClient:
    factory: sessionmaker[Session] = scoped_app.extensions[SESSIONMAKER_KEY]
    client = query_fixtures.seeded_client(scoped_app, factory)
    history.seed(factory, [{**item, "cloud": "c3"} for item in history.october()])
    for document in history.PRICES:
        response = client.put("/v1/price-lists/default", json=document, headers=ADMIN)
        assert response.status_code == 201, response.get_json()
    # acme: p1 and p2 of c3.
    assert client.post("/v1/accounts", json={"account_id": "acme"}, headers=ADMIN
                       ).status_code == 201
    for project in ("p1", "p2"):
        response = client.post("/v1/accounts/acme/memberships", headers=ADMIN, json={
            "cloud": "c3", "project_id": project, "effective_from": "2026-09-01T00:00:00Z"})
        assert response.status_code == 201, response.get_json()
    closed = client.post("/v1/periods/c3/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert closed.status_code == 200, closed.get_json()
    # c4: p2's alone, with a price list of its own.
    history.seed(factory, [
        history.event("compute.instance.create.end", "inst-q", "2026-10-02T00:00:00Z",
                      cloud="c4", project_id="p2", state="active", size=history.SMALL),
        history.event("compute.instance.delete.end", "inst-q", "2026-10-03T00:00:00Z",
                      cloud="c4", project_id=""),
    ])
    response = client.put("/v1/price-lists/c4", json=history.PRICES[0], headers=ADMIN)
    assert response.status_code == 201, response.get_json()
    closed = client.post("/v1/periods/c4/2026-10/close", headers=ADMIN, json=ACCEPT)
    assert closed.status_code == 200, closed.get_json()
    return client


WHO = ("created_by", "closed_by")


def without_who(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: None if k in WHO else without_who(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_who(member) for member in value]
    return value


def names_who(value: Any) -> bool:
    """Whether an answer names who did something, at any depth."""
    if isinstance(value, dict):
        return any(value.get(k) is not None for k in WHO) or any(
            names_who(v) for v in value.values())
    if isinstance(value, list):
        return any(names_who(member) for member in value)
    return False


def projects_in(value: Any) -> set[str]:
    """Every ``project_id`` an answer names, at any depth (a delete event's empty one
    names none)."""
    if isinstance(value, dict):
        project = value.get("project_id")
        found = {project} if isinstance(project, str) and project else set()
        for member in value.values():
            found |= projects_in(member)
        return found
    if isinstance(value, list):
        return set().union(*(projects_in(member) for member in value))
    return set()


def without_instants_of_the_call(value: Any) -> Any:
    """An answer without ``computed_at``, which differs from one call to the next."""
    if isinstance(value, dict):
        return {k: without_instants_of_the_call(v) for k, v in value.items()
                if k != "computed_at"}
    if isinstance(value, list):
        return [without_instants_of_the_call(member) for member in value]
    return value


def get(client: FlaskClient, url: str, headers: dict[str, str]) -> tuple[int, Any]:
    assert client.application is not None
    # Closed once read: a streamed answer (the export) holds its session until then.
    with client.get(url, headers=headers) as response:
        return response.status_code, assert_contract(client.application, "GET", url,
                                                     response)


def test_every_v1_get_route_has_a_scope_decision(scoped_app: Flask) -> None:
    routes = {rule.rule for rule in scoped_app.url_map.iter_rules()
              if rule.rule.startswith("/v1/") and "GET" in (rule.methods or ())}
    undecided = sorted(routes - set(DECISIONS))
    assert not undecided, (
        f"GET {', '.join(undecided)}: decide what a project reader sees there "
        "(require_project_read with visible_projects(), or a view that refuses project "
        "readers), document it in docs/reporting-queries.md and add its probes to DECISIONS")
    assert not set(DECISIONS) - routes, "DECISIONS names a route the app no longer has"


@pytest.mark.parametrize(("rule", "kind", "url"), PROBES,
                         ids=[f"{kind}:{url}" for _rule, kind, url in PROBES])
def test_a_project_reader_gets_what_was_decided(client: FlaskClient, rule: str, kind: str,
                                                url: str) -> None:
    assert client.application is not None
    adapter = client.application.url_map.bind("localhost")
    matched, _args = adapter.match(url.split("?", 1)[0], method="GET", return_rule=True)
    assert matched.rule == rule, f"{url} is served by {matched.rule}, not {rule}"
    if kind == OPEN:
        assert client.get(url).status_code == 200
        return
    status, body = get(client, url, P1)
    read_status, read_body = get(client, url, READ)
    if kind == ADMIN_ONLY:
        assert (status, body["error"]["code"]) == (403, "forbidden"), body
        assert read_status == 403, read_body
        assert get(client, url, ADMIN)[0] == 200  # the probe itself is sound
        return
    assert read_status == 200, read_body  # the probe itself is sound
    # Whatever was decided, nothing of another project's.
    assert projects_in(body) <= {"p1"}, body
    if kind == FILTERED:
        assert status == 200, body
        assert projects_in(body) == {"p1"}, body
        assert "p2" in projects_in(read_body), "the probe cannot show a leak"
    elif kind in (OWN, CLOUD_WIDE):
        assert status == 200, body
        assert without_instants_of_the_call(body) == without_instants_of_the_call(read_body)
        assert projects_in(body) == ({"p1"} if kind == OWN else set()), body
    elif kind == WITHOUT_WHO:
        assert status == 200, body
        assert names_who(read_body), "the probe cannot show a leak"
        assert not names_who(body), body
        assert without_instants_of_the_call(body) == without_instants_of_the_call(
            without_who(read_body))
    elif kind == AS_UNKNOWN:
        assert status == 200, body
        unknown_url = url.replace("c4", UNKNOWN_CLOUD)
        unknown_status, unknown = get(client, unknown_url, P1)
        assert unknown_status == 200, unknown

        def named_alike(answer: Any) -> str:
            return json.dumps(without_instants_of_the_call(answer)).replace("c4", UNKNOWN_CLOUD)

        assert named_alike(body) == named_alike(unknown)
        if "project_id=p1" in url or "/statements" not in url:
            # (the summaries list of a cloud p1 has no history in is empty for read too)
            assert named_alike(read_body) != named_alike(get(client, unknown_url, READ)[1]), \
                "the probe cannot show a leak"
    elif kind == HIDDEN:
        assert (status, body["error"]["code"]) == (404, "not_found")
    else:
        assert kind == REFUSED
        assert (status, body["error"]["code"]) == (403, "forbidden"), body
