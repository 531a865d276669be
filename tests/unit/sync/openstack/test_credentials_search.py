"""Where the adapter looks for OpenStack's clouds.yaml without OS_CLIENT_CONFIG_FILE:
exactly the documented locations (docs/reconciliation.md, "Credentials: clouds.yaml"),
in their order, and never openstacksdk's other names or directories."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reporting.openstack import credentials
from reporting.openstack.credentials import candidate_files, describe_search, resolve_cloud
from reporting.sync.observation import RunAborted

from .conftest import AUTH_URL


def _entry(project: str) -> dict[str, object]:
    return {"auth_type": "password", "region_name": "RegionOne",
            "auth": {"auth_url": AUTH_URL, "username": "admin", "password": "secret",
                     "project_name": project, "user_domain_name": "Default",
                     "project_domain_name": "Default"}}


def _write(directory: Path, name: str = "clouds.yaml", project: str = "p") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(yaml.safe_dump({"clouds": {"tally": _entry(project),
                                               "other": _entry("other")}}))
    return path


@pytest.fixture
def places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """A working directory, a home and a system directory, all empty."""
    system = tmp_path / "etc-openstack"
    monkeypatch.setattr(credentials, "SYSTEM_DIR", str(system))
    return {"cwd": tmp_path / "work", "home": tmp_path / "home", "system": system}


def _env(places: dict[str, Path], **extra: str) -> dict[str, str]:
    return {"HOME": str(places["home"]), **extra}


def test_the_documented_locations_in_the_documented_order(places: dict[str, Path]) -> None:
    assert candidate_files(_env(places), str(places["cwd"])) == [
        str(places["cwd"] / "clouds.yaml"),
        str(places["home"] / ".config" / "openstack" / "clouds.yaml"),
        str(places["system"] / "clouds.yaml"),
    ]
    xdg = places["home"] / "xdg"
    assert candidate_files(_env(places, XDG_CONFIG_HOME=str(xdg)), str(places["cwd"]))[1] \
        == str(xdg / "openstack" / "clouds.yaml")


def test_without_the_variable_the_first_location_found_wins(places: dict[str, Path]) -> None:
    env, cwd = _env(places), str(places["cwd"])
    _write(places["system"], project="from-system")
    assert resolve_cloud("tally", env, cwd).auth["project_name"] == "from-system"
    _write(places["home"] / ".config" / "openstack", project="from-home")
    assert resolve_cloud("tally", env, cwd).auth["project_name"] == "from-home"
    _write(places["cwd"], project="from-cwd")
    assert resolve_cloud("tally", env, cwd).auth["project_name"] == "from-cwd"
    assert describe_search(env).endswith("the first found on the search path "
                                         "(OS_CLIENT_CONFIG_FILE unset)")


@pytest.mark.parametrize("name", ["clouds.yml", "clouds.json"])
def test_other_names_are_not_read(places: dict[str, Path], name: str) -> None:
    _write(places["cwd"], name)
    with pytest.raises(RunAborted, match="no clouds.yaml found; searched "
                                         + str(places["cwd"] / "clouds.yaml")):
        resolve_cloud("tally", _env(places), str(places["cwd"]))


def test_the_site_directory_never_outranks_etc_openstack(
        places: dict[str, Path], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # openstacksdk's loader puts /etc/xdg/openstack before /etc/openstack; a file there
    # would outrank the mounted Secret.  It is not on Tally's path at all.
    site = tmp_path / "xdg-site"
    _write(site, project="from-site")
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(site.parent))
    _write(places["system"], project="from-system")
    searched = candidate_files(_env(places), str(places["cwd"]))
    assert not any("xdg" in path for path in searched)
    assert resolve_cloud("tally", _env(places), str(places["cwd"])).auth["project_name"] \
        == "from-system"


def test_os_cloud_has_no_effect(places: dict[str, Path],
                                monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(places["system"], project="tally-project")
    monkeypatch.setenv("OS_CLOUD", "other")  # the process environment openstacksdk reads
    for env in (_env(places, OS_CLOUD="other"),
                {"OS_CLIENT_CONFIG_FILE": str(path), "OS_CLOUD": "other"}):
        region = resolve_cloud("tally", env, str(places["cwd"]))
        assert region.name == "tally"
        assert region.auth["project_name"] == "tally-project"


def test_the_variable_names_the_only_file_searched(places: dict[str, Path],
                                                   tmp_path: Path) -> None:
    _write(places["cwd"], project="from-cwd")
    named = tmp_path / "mounted" / "clouds.yaml"
    env = _env(places, OS_CLIENT_CONFIG_FILE=str(named))
    with pytest.raises(RunAborted, match=f"searched {named}$"):
        resolve_cloud("tally", env, str(places["cwd"]))
