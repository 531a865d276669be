"""adapter_config accounts_by_domain: each run lists keystone's projects and books
every project no membership names into its domain's account (SQLite and PostgreSQL,
against the simulated cloud, whose projects are spread over three domains)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from simcloud.generator import DOMAINS
from tests.conftest import migrated_database_url
from tests.functional.sync.conftest import (
    ADMIN,
    START,
    Syncer,
    running_syncer,
    write_clouds_file,
)

T1 = START + dt.timedelta(hours=6)
T2 = T1 + dt.timedelta(hours=6)
ACCOUNT_OF = {domain: f"sim-{domain}" for domain in DOMAINS}


@pytest.fixture(params=["sqlite", "postgresql"])
def migrated_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return migrated_database_url(request.param, request, tmp_path)


@pytest.fixture
def sync_settings() -> dict[str, Any]:
    return {"accounts_by_domain": "{cloud}-{domain_id}"}


def _accounts(syncer: Syncer) -> dict[str, Any]:
    listed = syncer.client.get("/v1/accounts?limit=1000", headers=ADMIN).get_json()["items"]
    shown = {}
    for item in listed:
        body = syncer.client.get(f"/v1/accounts/{item['account_id']}", headers=ADMIN)
        shown[item["account_id"]] = body.get_json()
    return shown


def test_every_project_joins_its_domains_account_from_the_first_month(syncer: Syncer) -> None:
    syncer.advance(T1)
    run = syncer.sync_ok(T1)
    report = run["stats"]["default_accounts"]
    world = syncer.world.world
    expected = sorted({ACCOUNT_OF[p.domain_id] for p in world.projects} | {"sim-default"})
    assert len(expected) > 1, "the world spreads its projects over several domains"
    assert report["errors"] == [] and report["accounts_added"] == expected
    accounts = _accounts(syncer)
    assert sorted(accounts) == expected
    for project in world.projects:
        account = accounts[ACCOUNT_OF[project.domain_id]]
        (member,) = [m for m in account["memberships"] if m["project_id"] == project.id]
        # The month of the cloud's first observation: the whole open history.
        assert (member["cloud"], member["number"], member["effective_from"]) == (
            "sim", 1, "2026-11-01T00:00:00.000000Z")
        assert member["created_by"] == "tally-sync (default account)"
    assert accounts["sim-d-acme"]["description"] == "keystone domain d-acme of cloud sim"
    assert DOMAINS[1] == "d-acme"
    members = sum(len(a["memberships"]) for a in accounts.values())
    assert report["memberships_added"] == members == report["projects_listed"]
    assert members >= len(world.projects) + 1  # the admin project too
    # A second run books nothing more.
    syncer.advance(T2)
    again = syncer.sync_ok(T2)["stats"]["default_accounts"]
    assert (again["accounts_added"], again["memberships_added"]) == ([], 0)
    assert _accounts(syncer) == accounts


def test_a_project_an_operator_placed_is_left_where_it_is(syncer: Syncer) -> None:
    world = syncer.world.world
    placed = world.projects[1]
    assert syncer.client.post("/v1/accounts", json={"account_id": "big-customer"},
                              headers=ADMIN).status_code == 201
    joined = syncer.client.post("/v1/accounts/big-customer/memberships", headers=ADMIN, json={
        "cloud": "sim", "project_id": placed.id, "effective_from": "2026-11-01T03:00:00Z"})
    assert joined.status_code == 201, joined.get_json()
    syncer.advance(T1)
    syncer.sync_ok(T1)
    accounts = _accounts(syncer)
    assert [m["project_id"] for m in accounts["big-customer"]["memberships"]] == [placed.id]
    elsewhere = {m["project_id"] for name, account in accounts.items()
                 if name != "big-customer" for m in account["memberships"]}
    assert placed.id not in elsewhere
    assert world.projects[0].id in elsewhere  # the others did join their domain's


def test_a_template_that_names_no_account_is_said_and_the_run_completes(
        syncer: Syncer, tmp_path: Path) -> None:
    (tmp_path / "bad").mkdir()
    clouds = write_clouds_file(tmp_path / "bad", {"os_cloud": "sim-admin",
                                                  "accounts_by_domain": "{domain_id} of {cloud}"})
    url = syncer.app.config["TALLY_CONF"].database.connection
    with running_syncer(syncer.world, url, tmp_path / "bad", clouds) as bad:
        syncer.advance(T1)
        run = bad.sync_ok(T1)
        assert run["status"] == "completed" and run["stats"]["errors"] == []
        report = run["stats"]["default_accounts"]
        assert report["memberships_added"] == 0 and report["accounts_added"] == []
        domains = {p.domain_id for p in syncer.world.world.projects} | {"default"}
        assert len(report["errors"]) == len(domains) > 1
        assert "the default account 'default of sim' of keystone domain default of cloud "\
            "sim cannot be named so: account_id must be 1 to 255 letters, digits, '.', '_' " \
            "or '-', starting with a letter or digit" in report["errors"], report["errors"]
        assert bad.client.get("/v1/accounts", headers=ADMIN).get_json()["items"] == []


def test_credentials_keystone_refuses_the_list_to_are_said_not_a_failed_run(
        syncer: Syncer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Credentials nova lets list every project but keystone refuses its project list
    # (a project-scoped admin under keystone's scoped policies): keystone's view
    # answers as real keystone does for this one run.
    from simcloud.api import keystone

    real = keystone.list_projects

    def refused() -> Any:
        return keystone._error(403, "Forbidden", "You are not authorized to perform the "
                                                 "requested action: identity:list_projects.")

    monkeypatch.setitem(syncer.world.app.view_functions, "keystone.list_projects", refused)
    syncer.advance(T1)
    run = syncer.sync_ok(T1)
    assert run["status"] == "completed" and run["stats"]["errors"] == []
    (error,) = run["stats"]["default_accounts"]["errors"]
    assert error.startswith("listing keystone's projects: keystone answered GET "), error
    assert "HTTP 403" in error and "identity:list_projects" in error, error
    assert error.endswith("need keystone's identity:list_projects (an admin, or a "
                          "system-scoped reader)"), error
    assert syncer.client.get("/v1/accounts", headers=ADMIN).get_json()["items"] == []
    assert real is keystone.list_projects
    monkeypatch.undo()
    syncer.advance(T2)
    assert syncer.sync_ok(T2)["stats"]["default_accounts"]["memberships_added"] > 0

