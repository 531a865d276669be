"""The simulated cinder answers as cinder 29 did (its answers captured by tests/real).

tests/real/test_cinder.py wrote real cinder's answers to what the adapter asks
(``volumes/detail?all_tenants=1`` at the default microversion, 3.60 and 3.70, a page
of one, the types with ``is_public=None``, the version list); tests/fixtures/api/cinder29_*
were captured from them.  The simulated cinder must give the same shapes
(tests/api_shapes.py: members, JSON types, instant formats, link forms).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer, running_simcloud
from tests.api_shapes import differences, link, shape
from tests.conftest import load_fixture
from tests.unit.simcloud.apihelp import get, password_token


@pytest.fixture(scope="module")
def sim() -> Any:
    with running_simcloud(WorldConfig(seed=31, scale=200)) as server:
        server.world.advance_to("2026-11-05T00:00:00Z")
        yield server


def _origin(capture: dict[str, Any]) -> str:
    match = re.match(r"^https?://[^/]+", capture["request"])
    assert match, capture["request"]
    return match.group(0)


def _ask(sim: SimCloudServer, capture: dict[str, Any]) -> Any:
    """The capture's request of the simulated cinder, in the admin's project."""
    token = password_token(sim, "admin")
    project = sim.identity.users["admin"].project_id
    parts = urlsplit(capture["request"])
    path = re.sub(r"^/v3/[0-9a-f]{32}/", f"/v3/{project}/", parts.path)
    version = capture["microversion"]
    return get(sim, f"/volume{path}", token, f"volume {version}" if version else None,
               **dict(parse_qsl(parts.query)))


def _by_status(body: dict[str, Any], base: str) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for volume in body["volumes"]:
        entry = {"shape": shape(volume),
                 "links": sorted(link(item["href"], base) for item in volume["links"])}
        if entry not in found.setdefault(volume["status"], []):
            found[volume["status"]].append(entry)
    return found


def _next(body: dict[str, Any], base: str) -> tuple[str, list[tuple[str, str]]]:
    [only] = body["volumes_links"]
    assert only["rel"] == "next"
    parts = urlsplit(only["href"])
    query = sorted((k, "<id>" if k == "marker" else v) for k, v in parse_qsl(parts.query))
    return link(f"{parts.scheme}://{parts.netloc}{parts.path}", base), query


@pytest.mark.parametrize("capture_name", [
    "cinder29_volumes-detail.json", "cinder29_v3.60_volumes-detail.json",
    "cinder29_v3.70_volumes-detail.json", "cinder29_volumes-detail-page.json"])
def test_volume_listing_is_shaped_as_cinder29s(sim: SimCloudServer,
                                               capture_name: str) -> None:
    capture = load_fixture(f"api/{capture_name}")
    answer = _ask(sim, capture)
    assert answer.status_code == capture["status"] == 200
    assert answer.headers["Content-Type"] == capture["content_type"]
    body = answer.json()
    assert set(body) == set(capture["body"])
    real = _by_status(capture["body"], _origin(capture))
    mine = _by_status(body, f"{sim.base_url}/volume")
    assert real, "real cinder listed no volume"
    for status, entries in real.items():
        assert status in mine, f"the simulated cloud lists no {status} volume"
        found = differences(entries[:1], mine[status][:1])
        assert not found, "\n".join(found)
    if "volumes_links" in capture["body"]:
        assert _next(body, f"{sim.base_url}/volume") == \
            _next(capture["body"], _origin(capture))


def test_types_are_shaped_as_cinder29s(sim: SimCloudServer) -> None:
    capture = load_fixture("api/cinder29_types.json")
    answer = _ask(sim, capture)
    assert answer.status_code == 200
    # cinder's description is null for a type created without one (values, not shapes)
    real = {k: v for k, v in shape(capture["body"]["volume_types"][0]).items()
            if k != "description"}
    mine = {k: v for k, v in shape(answer.json()["volume_types"][0]).items()
            if k != "description"}
    assert real == mine


def test_version_list_is_cinder29s(sim: SimCloudServer) -> None:
    capture = load_fixture("api/cinder29_versions.json")
    answer = get(sim, "/volume/", None)
    assert answer.status_code == capture["status"] == 300

    def summary(body: dict[str, Any], base: str) -> list[Any]:
        return [(v["id"], v["status"], v["version"], v["min_version"], v["updated"],
                 v["media-types"], [(item["rel"], link(item["href"], base))
                                    for item in v["links"]]) for v in body["versions"]]

    assert summary(answer.json(), f"{sim.base_url}/volume") == \
        summary(capture["body"], _origin(capture))
