"""Arbitrary items never make POST /v1/events answer 500, on either backend: each is
stored, a duplicate or rejected and dead-lettered."""

from __future__ import annotations

import json
from typing import Any

from flask.testing import FlaskClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import event

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=300),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=20), children, max_size=4),
    max_leaves=12,
)

FIELDS = ["event_id", "event_type", "platform", "cloud", "resource_type", "resource_id",
          "project_id", "timestamp", "source", "payload"]


@st.composite
def mutated_events(draw: st.DrawFn) -> Any:
    item: dict[str, Any] = event(draw(st.integers(0, 10**6)))
    for field in draw(st.lists(st.sampled_from(FIELDS), max_size=3)):
        if draw(st.booleans()):
            item[field] = draw(json_values)
        else:
            item.pop(field, None)
    if draw(st.booleans()):
        item["payload"] = {"size": draw(json_values), "state": draw(json_values)}
    if draw(st.booleans()):
        item["resource_type"] = draw(st.sampled_from(
            ["instance", "volume", "floating_ip", "image", "loadbalancer", "share"]))
    return item


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(mutated_events() | json_values, min_size=1, max_size=5))
def test_no_item_makes_ingest_fail(client: FlaskClient, items: list[Any]) -> None:
    response = client.post("/v1/events", data=json.dumps({"events": items}),
                           headers={**auth("ingest"), "Content-Type": "application/json"})
    assert response.status_code == 200, response.get_data(as_text=True)
    body = response.get_json()
    assert [r["index"] for r in body["results"]] == list(range(len(items)))
    assert body["stored"] + body["duplicates"] + body["rejected"] == len(items)
    for result in body["results"]:
        assert (result["status"] == "rejected") == ("reason" in result)
