"""nova 34's API answers against the simulated cloud's, for the same scripted servers.

Real nova (tests/real/nova_driver.py) sits behind the simulated cloud's keystone, so
one admin token and one member token ask both.  As the member, the test creates three
servers on real nova over its API (one left active, one stopped, one deleted); the
simulated world holds servers in the same states.  Both answer the same requests:
``servers/detail`` at 2.1, 2.47 and 2.69 (as admin for every project and as the
member), a page of one, the deleted listing, the version documents, and the errors a
client meets (403 on another project's listing, 404 on an unknown server).  For each
server status the two must give the same shape (tests/api_shapes.py: members,
JSON types, instant formats, link forms), and the errors the same body.

Real nova's answers are written to ``api-answers/`` under the test's temporary
directory; tests/fixtures/api/nova34_* were captured from them.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from simcloud.config import WorldConfig
from simcloud.server import SimCloudServer
from tests.api_shapes import (
    by_status,
    differences,
    listing_differences,
    next_link,
    shape,
    version_links,
)
from tests.e2e.harness import wait_until
from tests.real.conftest import RealNova
from tests.unit.simcloud.apihelp import password_token

# A month of churn seen on its fifth day: servers active, stopped and deleted.
SIM_AT = "2026-11-05T00:00:00Z"
VERSIONS = ("2.1", "2.47", "2.69")
# Creating a server: nova 2.37+ needs ``networks`` ("auto": a port on nova's fake neutron).
CREATE_VERSION = "2.37"


@dataclass
class Cloud:
    """One compute API: its root (nova's version document) and its v2.1 URL."""

    root: str
    tokens: dict[str, str]
    captures: Path | None = None

    @property
    def api(self) -> str:
        return f"{self.root}/v2.1"

    def get(self, path: str, who: str = "admin", version: str | None = None,
            **params: Any) -> requests.Response:
        headers = {"X-Auth-Token": self.tokens[who], "Accept": "application/json"}
        if version is not None:
            headers["OpenStack-API-Version"] = f"compute {version}"
        url = path if path.startswith("http") else f"{self.root}{path}"
        response = requests.get(url, headers=headers, params=params or None, timeout=60,
                                allow_redirects=False)
        if self.captures is not None:
            name = "_".join(filter(None, [who, version, path.strip("/").replace("/", "_"),
                                          "-".join(f"{k}={v}" for k, v in params.items())]))
            (self.captures / f"{name or 'root'}.json").write_text(json.dumps(
                {"status": response.status_code, "request": url, "params": params,
                 "version": version, "content_type": response.headers.get("Content-Type"),
                 "text": response.text}, indent=2, sort_keys=True))
        return response


@dataclass
class Pair:
    nova: Cloud
    sim: Cloud
    since: str  # before real nova's first server, in nova's own clock


def _nova_call(cloud: Cloud, method: str, path: str, body: Any = None,
               version: str = CREATE_VERSION) -> requests.Response:
    return requests.request(method, f"{cloud.api}{path}", json=body, timeout=60, headers={
        "X-Auth-Token": cloud.tokens["member"],
        "OpenStack-API-Version": f"compute {version}"})


def _status(cloud: Cloud, server: str) -> str | None:
    response = cloud.get(f"/v2.1/servers/{server}", "member", CREATE_VERSION)
    return None if response.status_code == 404 else str(response.json()["server"]["status"])


def _script(cloud: Cloud) -> None:
    """Three servers of the member on real nova: active, stopped, deleted."""
    images = cloud.get("/v2.1/images", "member").json()["images"]
    created = {}
    for name in ("active", "stopped", "deleted"):
        answer = _nova_call(cloud, "POST", "/servers", {"server": {
            "name": f"api-{name}", "imageRef": images[0]["id"], "flavorRef": "1",
            "networks": "auto"}})
        assert answer.status_code == 202, answer.text
        created[name] = answer.json()["server"]["id"]
    for server in created.values():
        wait_until(lambda s=server: _status(cloud, s) == "ACTIVE", 120, f"{server} active")
    answer = _nova_call(cloud, "POST", f"/servers/{created['stopped']}/action",
                        {"os-stop": None})
    assert answer.status_code == 202, answer.text
    wait_until(lambda: _status(cloud, created["stopped"]) == "SHUTOFF", 120, "a stop")
    answer = _nova_call(cloud, "DELETE", f"/servers/{created['deleted']}")
    assert answer.status_code == 204, answer.text
    wait_until(lambda: _status(cloud, created["deleted"]) is None, 120, "a delete")


@pytest.fixture(scope="module")
def pair(nova_python: Path, rabbit_url: str,
         tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    workdir = tmp_path_factory.mktemp("api-answers")
    captures = workdir / "api-answers"
    captures.mkdir()
    world = SimCloudServer(WorldConfig(seed=31, scale=200))
    world.start()
    nova = None
    try:
        world.world.advance_to(SIM_AT)
        tokens = {"admin": password_token(world, "admin"),
                  "member": password_token(world, "demo")}
        nova = RealNova(nova_python, workdir, rabbit_url, f"{world.base_url}/identity",
                        f"nova-api-{uuid.uuid4().hex[:8]}")
        real = Cloud(nova.compute_url.removesuffix("/v2.1"), tokens)
        since = (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5)).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        _script(real)
        real.captures = captures
        print(f"real nova's answers: {captures}")
        yield Pair(real, Cloud(f"{world.base_url}/compute", tokens),
                   since)
    finally:
        if nova is not None:
            nova.stop()
        world.stop()


def _compare_listing(pair: Pair, who: str, version: str, **params: Any) -> None:
    real = pair.nova.get("/v2.1/servers/detail", who, version, **params)
    sim = pair.sim.get("/v2.1/servers/detail", who, version, **params)
    assert real.status_code == sim.status_code == 200, (real.text, sim.text)
    assert real.headers["Content-Type"] == sim.headers["Content-Type"]
    found = listing_differences(real.json(), pair.nova.root, sim.json(), pair.sim.root)
    assert not found, "\n".join(found)


@pytest.mark.rabbit
@pytest.mark.parametrize("version", VERSIONS)
def test_admin_listing_every_project(pair: Pair, version: str) -> None:
    _compare_listing(pair, "admin", version, all_tenants="1")


@pytest.mark.rabbit
@pytest.mark.parametrize("version", VERSIONS)
def test_member_listing(pair: Pair, version: str) -> None:
    _compare_listing(pair, "member", version)


@pytest.mark.rabbit
@pytest.mark.parametrize("version", VERSIONS)
def test_deleted_listing(pair: Pair, version: str) -> None:
    real = pair.nova.get("/v2.1/servers/detail", "admin", version, deleted="True",
                         all_tenants="1", **{"changes-since": pair.since})
    sim = pair.sim.get("/v2.1/servers/detail", "admin", version, deleted="True",
                       all_tenants="1", **{"changes-since": "2026-11-01T00:00:00Z"})
    assert real.status_code == sim.status_code == 200, (real.text, sim.text)
    assert set(by_status(real.json(), pair.nova.root)) == {"DELETED"}, real.text
    found = listing_differences(real.json(), pair.nova.root, sim.json(), pair.sim.root)
    assert not found, "\n".join(found)


@pytest.mark.rabbit
@pytest.mark.parametrize("version", VERSIONS)
def test_a_page_links_the_next(pair: Pair, version: str) -> None:
    real = pair.nova.get("/v2.1/servers/detail", "admin", version, all_tenants="1",
                         limit="1").json()
    sim = pair.sim.get("/v2.1/servers/detail", "admin", version, all_tenants="1",
                       limit="1").json()
    assert len(real["servers"]) == len(sim["servers"]) == 1
    assert next_link(real, pair.nova.root) == next_link(sim, pair.sim.root)


@pytest.mark.rabbit
@pytest.mark.parametrize("path", ["/", "/v2.1/"])
def test_version_documents(pair: Pair, path: str) -> None:
    real = pair.nova.get(path, "member")
    sim = pair.sim.get(path, "member")
    assert real.status_code == sim.status_code, (real.text, sim.text)
    assert not differences(shape(real.json()), shape(sim.json())), \
        "\n".join(differences(shape(real.json()), shape(sim.json())))

    assert version_links(real.json(), pair.nova.root) == \
        version_links(sim.json(), pair.sim.root)


@pytest.mark.rabbit
def test_another_projects_listing_is_forbidden_alike(pair: Pair) -> None:
    real = pair.nova.get("/v2.1/servers/detail", "member", all_tenants="1")
    sim = pair.sim.get("/v2.1/servers/detail", "member", all_tenants="1")
    assert real.status_code == sim.status_code == 403
    assert sim.json() == real.json()
    assert real.headers["Content-Type"] == sim.headers["Content-Type"]


@pytest.mark.rabbit
@pytest.mark.parametrize("version", VERSIONS)
def test_an_unknown_server_is_not_found_alike(pair: Pair, version: str) -> None:
    unknown = str(uuid.uuid4())
    real = pair.nova.get(f"/v2.1/servers/{unknown}", "admin", version)
    sim = pair.sim.get(f"/v2.1/servers/{unknown}", "admin", version)
    assert real.status_code == sim.status_code == 404
    assert sim.json() == real.json()
    assert real.headers["Content-Type"] == sim.headers["Content-Type"]
