"""The simulated nova answers as nova 34 did (its answers captured by tests/real).

tests/real/test_api_answers.py compares the two clouds live; these captures of real
nova (tests/fixtures/api/nova34_*, api/errors/nova34_*) hold the simulated cloud to
the same shapes in every run of the main suite: per server status the same members,
JSON types, instant formats and link forms, the same version documents and errors.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer, running_simcloud
from tests.api_shapes import (
    by_status,
    differences,
    listing_differences,
    next_link,
    shape,
    version_links,
)
from tests.conftest import load_fixture
from tests.unit.simcloud.apihelp import get, password_token

ACCOUNTS = {"admin": "admin", "member": "demo"}


@pytest.fixture(scope="module")
def sim() -> Any:
    with running_simcloud(WorldConfig(seed=31, scale=200)) as server:
        server.world.advance_to("2026-11-05T00:00:00Z")
        yield server


def _origin(capture: dict[str, Any]) -> str:
    match = re.match(r"^https?://[^/]+", capture["request"])
    assert match, capture["request"]
    return match.group(0)


def _ask(sim: SimCloudServer, capture: dict[str, Any], **params: str) -> Any:
    token = password_token(sim, ACCOUNTS[capture["account"]])
    path = capture["request"][len(_origin(capture)):].split("?")[0]
    version = capture["microversion"]
    return get(sim, f"/compute{path}", token, f"compute {version}" if version else None,
               **params)


@pytest.mark.parametrize("capture_name, params", [
    ("nova34_v2.1_servers-detail.json", {"all_tenants": "1"}),
    ("nova34_v2.47_servers-detail.json", {"all_tenants": "1"}),
    ("nova34_v2.69_servers-detail.json", {"all_tenants": "1"}),
    ("nova34_v2.69_servers-detail-member.json", {}),
    ("nova34_v2.69_servers-detail-deleted.json",
     {"all_tenants": "1", "deleted": "True", "changes-since": "2026-11-01T00:00:00Z"}),
])
def test_listing_is_shaped_as_nova34s(sim: SimCloudServer, capture_name: str,
                                      params: dict[str, str]) -> None:
    capture = load_fixture(f"api/{capture_name}")
    answer = _ask(sim, capture, **params)
    assert answer.status_code == capture["status"] == 200
    assert answer.headers["Content-Type"] == capture["content_type"]
    found = listing_differences(capture["body"], _origin(capture), answer.json(),
                                f"{sim.base_url}/compute")
    assert not found, "\n".join(found)


def test_deleted_listing_holds_only_deleted_servers(sim: SimCloudServer) -> None:
    capture = load_fixture("api/nova34_v2.69_servers-detail-deleted.json")
    answer = _ask(sim, capture, all_tenants="1", deleted="True",
                  **{"changes-since": "2026-11-01T00:00:00Z"})
    assert set(by_status(capture["body"], _origin(capture))) == {"DELETED"}
    assert set(by_status(answer.json(), f"{sim.base_url}/compute")) == {"DELETED"}


def test_a_page_links_the_next_as_nova34s(sim: SimCloudServer) -> None:
    capture = load_fixture("api/nova34_v2.69_servers-detail-page.json")
    answer = _ask(sim, capture, all_tenants="1", limit="1").json()
    assert next_link(capture["body"], _origin(capture)) == \
        next_link(answer, f"{sim.base_url}/compute")


@pytest.mark.parametrize("capture_name", ["nova34_versions.json", "nova34_v2.1-version.json"])
def test_version_document_is_nova34s(sim: SimCloudServer, capture_name: str) -> None:
    capture = load_fixture(f"api/{capture_name}")
    answer = _ask(sim, capture)
    assert answer.status_code == capture["status"]
    found = differences(shape(capture["body"]), shape(answer.json()))
    assert not found, "\n".join(found)
    assert version_links(answer.json(), f"{sim.base_url}/compute") == \
        version_links(capture["body"], _origin(capture))


def test_forbidden_listing_answers_nova34s_body(sim: SimCloudServer) -> None:
    capture = load_fixture("api/errors/nova34_forbidden.json")
    answer = _ask(sim, capture, all_tenants="1")
    assert (answer.status_code, answer.headers["Content-Type"], answer.json()) == \
        (capture["status"], capture["content_type"], json.loads(capture["body"]))


def test_unknown_server_answers_nova34s_body(sim: SimCloudServer) -> None:
    capture = load_fixture("api/errors/nova34_not-found.json")
    answer = _ask(sim, capture)
    assert (answer.status_code, answer.headers["Content-Type"], answer.json()) == \
        (capture["status"], capture["content_type"], json.loads(capture["body"]))
