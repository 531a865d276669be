"""``tally --os-cloud NAME``: a keystone token from clouds.yaml, Tally's endpoint from
the catalog, against the simulated cloud and a running tally-reporting."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import yaml

from tallyclient.cli.main import main
from tests.functional.openstack.cloud import KeystoneCloud


@pytest.fixture
def cloud(sqlite_cloud: KeystoneCloud, monkeypatch: pytest.MonkeyPatch) -> Iterator[KeystoneCloud]:
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(sqlite_cloud.clouds))
    for name in ("OS_CLOUD", "TALLY_URL", "TALLY_TOKEN", "TALLY_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    yield sqlite_cloud


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def ids(out: str) -> list[str]:
    return [item["resource_id"] for item in json.loads(out)]


def test_endpoint_from_the_catalog_and_the_projects_scope(
        cloud: KeystoneCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "--os-cloud", "sim-member", "--format", "json",
                         "inventory", "--all")
    assert (code, err) == (0, "")
    assert ids(out) == ["vm-1"]
    code, out, _ = run(capsys, "--os-cloud", "sim-admin", "--format", "json", "inventory")
    assert (code, ids(out)) == (0, ["vm-1", "vm-2"])
    code, out, _ = run(capsys, "lifecycle", "sim", "instance", "vm-1",
                       "--os-cloud", "sim-member")
    assert code == 0 and cloud.member_project in out


def test_another_projects_data_is_refused(cloud: KeystoneCloud,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--os-cloud", "sim-member", "usage", "--from",
                       "2026-11-01T00:00:00Z", "--to", "2026-11-02T00:00:00Z",
                       "--project", cloud.other_project)
    assert code == 1 and "403 forbidden" in err
    code, _, err = run(capsys, "--os-cloud", "sim-member", "history", "sim", "instance", "vm-2")
    assert code == 1 and "404 not_found" in err


def test_os_cloud_from_the_environment(cloud: KeystoneCloud, capsys: pytest.CaptureFixture[str],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OS_CLOUD", "sim-auditor")
    code, out, _ = run(capsys, "--format", "json", "inventory")
    assert (code, ids(out)) == (0, ["vm-1", "vm-2"])


def test_url_overrides_the_catalog(cloud: KeystoneCloud,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    registered = cloud.sim.tally_url
    cloud.sim.tally_url = None  # Tally not in the catalog
    try:
        code, _, err = run(capsys, "--os-cloud", "sim-member", "inventory")
        assert code == 1
        assert "no usage-history endpoint in the catalog" in err and "--url" in err
        code, out, err = run(capsys, "--os-cloud", "sim-member", "--url", cloud.api.base_url,
                             "--format", "json", "inventory")
        assert (code, err, ids(out)) == (0, "", ["vm-1"])
    finally:
        cloud.sim.tally_url = registered


def test_bad_cloud_entries(cloud: KeystoneCloud, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--os-cloud", "no-such-cloud", "inventory")
    assert code == 2 and "no-such-cloud" in err
    document = yaml.safe_load(cloud.clouds.read_text())
    document["clouds"]["sim-member"]["auth"]["password"] = "wrong"
    wrong = cloud.clouds.with_name("wrong-clouds.yaml")
    wrong.write_text(yaml.safe_dump(document))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OS_CLIENT_CONFIG_FILE", str(wrong))
        code, _, err = run(capsys, "--os-cloud", "sim-member", "inventory")
    assert code == 1 and "keystone refused the credentials" in err


def test_bearer_token_and_os_cloud_exclude_each_other(
        cloud: KeystoneCloud, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--os-cloud", "sim-member", "--token", "x", "inventory"])
    assert exit_info.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
