"""The ``openstack tally ...`` plugin, run through the real ``openstack`` command's entry
point (osc.py: in this process; the installed command itself in the formats test)
against the simulated cloud (Tally found in its catalog) and a running
tally-reporting."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import yaml

from tests.functional.openstack import osc
from tests.functional.openstack.cloud import KeystoneCloud
from tests.functional.openstack.osc import Finished

PERIOD = ["--from", "2026-11-01T00:00:00Z", "--to", "2026-11-01T01:00:00Z"]


def openstack(cloud: KeystoneCloud, entry: str, *argv: str,
              clouds: Path | None = None) -> Finished:
    """``openstack --os-cloud ENTRY tally ARGV`` run in this process (osc.py)."""
    return osc.openstack(clouds or cloud.clouds, entry, *argv)


def test_resource_list_in_every_format(sqlite_cloud: KeystoneCloud) -> None:
    """The installed ``openstack`` command (a process of its own) finds the plugin."""
    clouds = sqlite_cloud.clouds
    done = osc.openstack_process(clouds, "sim-admin", "resource", "list", "-f", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert [row["resource_id"] for row in rows] == ["vm-1", "vm-2"]
    assert rows[0]["size"] == {"vcpus": 1, "ram_gb": 2, "disk_gb": 20, "flavor": "m1.small"}
    done = osc.openstack_process(clouds, "sim-member", "resource", "list", "-f", "value",
                                 "-c", "resource_id", "-c", "project_id")
    assert (done.returncode, done.stdout.split()) == (
        0, ["vm-1", sqlite_cloud.member_project])
    done = osc.openstack_process(clouds, "sim-auditor", "resource", "list", "-f", "csv")
    assert done.returncode == 0, done.stderr
    table = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [row["resource_id"] for row in table] == ["vm-1", "vm-2"]
    done = osc.openstack_process(clouds, "sim-member", "resource", "list")  # -f table
    assert done.returncode == 0 and "| vm-1 " in done.stdout and "vm-2" not in done.stdout


def test_resource_and_lifecycle_show(sqlite_cloud: KeystoneCloud) -> None:
    done = openstack(sqlite_cloud, "sim-member", "resource", "show", "sim", "instance",
                     "vm-1", "-f", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["resource_id"], shown["project_id"], shown["live"]) == (
        "vm-1", sqlite_cloud.member_project, True)
    done = openstack(sqlite_cloud, "sim-member", "lifecycle", "show", "sim", "instance",
                     "vm-1", "-f", "json")
    assert done.returncode == 0, done.stderr
    (interval,) = json.loads(done.stdout)
    assert (interval["start"], interval["end"], interval["state"]) == (
        "2026-11-01T00:00:00.000000Z", None, "active")
    # Another project's resource: the API's 404, exit 1.
    done = openstack(sqlite_cloud, "sim-member", "resource", "show", "sim", "instance", "vm-2")
    assert done.returncode == 1 and "404 not_found" in done.stderr


def test_usage_show_is_scoped(sqlite_cloud: KeystoneCloud) -> None:
    done = openstack(sqlite_cloud, "sim-member", "usage", "show", *PERIOD, "-f", "json")
    assert done.returncode == 0, done.stderr
    assert [(row["resource_id"], row["seconds"]) for row in json.loads(done.stdout)] == [
        ("vm-1", 3600)]
    done = openstack(sqlite_cloud, "sim-admin", "usage", "show", *PERIOD, "--group-by",
                     "project", "--breakdown", "-f", "json")
    rows = json.loads(done.stdout)
    assert sorted(row["project_id"] for row in rows) == sorted(
        [sqlite_cloud.member_project, sqlite_cloud.other_project])
    assert {row["state"] for row in rows} == {"active"}
    done = openstack(sqlite_cloud, "sim-member", "usage", "show", *PERIOD, "--project",
                     sqlite_cloud.other_project)
    assert done.returncode == 1 and "403 forbidden" in done.stderr


def test_not_in_the_catalog_then_an_endpoint_override(sqlite_cloud: KeystoneCloud) -> None:
    registered = sqlite_cloud.sim.tally_url
    sqlite_cloud.sim.tally_url = None
    try:
        done = openstack(sqlite_cloud, "sim-member", "resource", "list")
        assert done.returncode == 1
        assert "no usage-history endpoint in the catalog" in done.stderr
        document = yaml.safe_load(sqlite_cloud.clouds.read_text())
        document["clouds"]["sim-member"]["usage_history_endpoint_override"] = registered
        override = sqlite_cloud.clouds.with_name("override-clouds.yaml")
        override.write_text(yaml.safe_dump(document))
        done = openstack(sqlite_cloud, "sim-member", "resource", "list", "-f", "value",
                         "-c", "resource_id", clouds=override)
        assert (done.returncode, done.stdout.split()) == (0, ["vm-1"]), done.stderr
    finally:
        sqlite_cloud.sim.tally_url = registered


def test_statement_show_is_scoped(sqlite_cloud: KeystoneCloud) -> None:
    member, other = sqlite_cloud.member_project, sqlite_cloud.other_project
    month = ["--cloud", "sim", "--period", "2026-11"]
    done = openstack(sqlite_cloud, "sim-member", "statement", "show", *month, "--project",
                     member, "-f", "json")
    assert done.returncode == 0, done.stderr
    statement = json.loads(done.stdout)
    # The statement's own fields, as the API answers them, then its lines.
    assert {"currency", "status", "provisional", "subtotal", "adjustments_total",
            "total"} <= set(statement), statement
    (line,) = statement["lines"]
    # No price list: the line is there, unrated, with the reason.
    assert (line["resource_id"], line["start"], line["end"]) == (
        "vm-1", "2026-11-01T00:00:00.000000Z", "2026-12-01T00:00:00.000000Z")
    assert line["unrated"]
    done = openstack(sqlite_cloud, "sim-member", "statement", "show", *month, "--project",
                     member)  # -f table: the lines, then status and totals as `tally` prints
    assert done.returncode == 0, done.stderr
    assert f"{statement['status']}" in done.stdout.splitlines()[-1]
    assert f"total {statement['total']}" in done.stdout.splitlines()[-1]
    assert "None" not in done.stdout, done.stdout
    done = openstack(sqlite_cloud, "sim-member", "statement", "show", *month, "-f", "csv")
    assert done.returncode == 0, done.stderr
    totals = list(csv.DictReader(io.StringIO(done.stdout)))
    assert [(row["project_id"], row["unrated_lines"]) for row in totals] == [(member, "1")]
    done = openstack(sqlite_cloud, "sim-auditor", "statement", "show", *month, "-f", "value",
                     "-c", "project_id")
    assert (done.returncode, sorted(done.stdout.split())) == (0, sorted([member, other]))
    done = openstack(sqlite_cloud, "sim-admin", "statement", "show", *month)  # -f table
    assert done.returncode == 0 and f"| {member} " in done.stdout
    done = openstack(sqlite_cloud, "sim-member", "statement", "show", *month, "--project",
                     other)
    assert done.returncode == 1 and "403 forbidden" in done.stderr
