"""What one caller can make the API hold: a dead-letter page is capped by size as well
as by rows, and junk cloud names in refused items add no metric series.  Both backends."""

from __future__ import annotations

import json
import uuid

from flask.testing import FlaskClient
from prometheus_client import REGISTRY

from reporting.api.rejected import MAX_PAGE_BYTES
from tests.functional.reporting.fixtures import auth
from tests.functional.reporting.test_ingest_api import event, post


def test_a_dead_letter_page_is_capped_by_size(client: FlaskClient) -> None:
    blob = "x" * (MAX_PAGE_BYTES // 3)
    for n in range(5):
        bad = event(n, timestamp="yesterday", payload={"provider": {"blob": blob}})
        assert post(client, {"events": [bad]}).get_json()["rejected"] == 1
    seen: list[int] = []
    url = "/v1/rejected-events?limit=100"
    pages = 0
    while True:
        response = client.get(url, headers=auth("read"))
        assert response.status_code == 200
        assert len(response.get_data()) <= MAX_PAGE_BYTES + 64 * 1024
        body = response.get_json()
        assert body["items"], "a page always holds at least one row"
        seen += [item["id"] for item in body["items"]]
        pages += 1
        if body["next_marker"] is None:
            break
        url = f"/v1/rejected-events?limit=100&marker={body['next_marker']}"
    assert len(seen) == 5 and seen == sorted(set(seen))
    assert pages >= 2


def test_one_huge_row_still_has_a_page_of_its_own(client: FlaskClient) -> None:
    bad = event(1, timestamp="yesterday",
                payload={"provider": {"blob": "y" * (MAX_PAGE_BYTES + 10)}})
    data = json.dumps({"events": [bad]})
    response = client.post("/v1/events", data=data,
                           headers={**auth("ingest"), "Content-Type": "application/json"})
    assert response.get_json()["rejected"] == 1
    body = client.get("/v1/rejected-events", headers=auth("read")).get_json()
    assert len(body["items"]) == 1 and body["next_marker"] is None


def test_junk_clouds_in_refused_items_add_no_metric_series(client: FlaskClient) -> None:
    junk = [f"junk-{uuid.uuid4().hex}" for _ in range(50)]
    items = [event(n, cloud=cloud, timestamp="yesterday") for n, cloud in enumerate(junk)]
    assert post(client, {"events": items}).get_json()["rejected"] == 50
    labels = {sample.labels.get("cloud") for family in REGISTRY.collect()
              if family.name == "tally_ingest_events" for sample in family.samples}
    assert not labels & set(junk)
