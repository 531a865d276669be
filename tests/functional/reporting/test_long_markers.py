"""Every ``next_marker`` the API issues is accepted back, through the real server.

The widest sort keys a row can hold (ids of 255 characters of four UTF-8 bytes each,
or of control characters JSON would escape six bytes each) once gave markers of over
4,000 characters: past ``MAX_MARKER_LEN`` and gunicorn's request line, so the listing
could not go on.  Both backends, tally-reporting under gunicorn.
"""

from __future__ import annotations

from typing import Any

import requests

from tests.functional.reporting.fixtures import RunningServer, auth

EMOJI = "\U0001f600"
CONTROL = "\x01"
FROM, TO = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def _event(n: int, platform: str, cloud: str, rtype: str, rid: str, project: str
           ) -> dict[str, Any]:
    return {"event_id": f"long-{n}", "event_type": "thing.create.end", "platform": platform,
            "cloud": cloud, "resource_type": rtype, "resource_id": rid, "project_id": project,
            "timestamp": "2026-01-01T00:00:00Z", "source": "collector",
            "payload": {"state": "active"}}


def _widest(char: str, n: int) -> list[dict[str, Any]]:
    """Two resources whose every text part is as long as it may be, in ``char``."""
    return [_event(n + k, char * 64, char * 255, "t" * 64, char * 254 + str(k), char * 254 + str(k))
            for k in range(2)]


def _pages(server: RunningServer, path: str, params: dict[str, str]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    marker: str | None = None
    for _ in range(10):
        query = {**params, "limit": "1", **({"marker": marker} if marker else {})}
        response = requests.get(server.base_url + path, params=query, headers=auth("read"),
                                timeout=30)
        assert response.status_code == 200, (path, len(marker or ""), response.text[:300])
        body = response.json()
        items.extend(body["items"])
        marker = body["next_marker"]
        if marker is None:
            return items
    raise AssertionError(f"{path}: more pages than rows")


def test_every_issued_marker_is_accepted_back(reporting_server: RunningServer) -> None:
    events = _widest(EMOJI, 0) + _widest(CONTROL, 2)
    stored = requests.post(reporting_server.base_url + "/v1/events", json={"events": events},
                           headers=auth("ingest"), timeout=30).json()
    assert stored["stored"] == 4, stored
    ids = sorted(e["resource_id"] for e in events)
    for path, params in [
        ("/v1/resources", {}),
        ("/v1/resources", {"as_of": "2026-01-01T12:00:00Z"}),
        ("/v1/usage", {"from": FROM, "to": TO}),
        ("/v1/usage", {"from": FROM, "to": TO, "group_by": "project"}),
    ]:
        items = _pages(reporting_server, path, params)
        got = sorted(item.get("resource_id", item.get("project_id")) for item in items)
        assert got == ids, (path, params)
