"""Tally installs five top-level packages under generic names.

``mapping``, ``tally_common``, ``collector``, ``reporting`` and ``simcloud`` are names another
distribution could also ship; installed side by side, one would silently replace
the other's files.  Tally is therefore installed into a virtualenv of its own
(docs/deployment.md), and these tests fail when anything else in the environment
claims one of the names.

The clients (``tally`` and the ``openstack`` plugin) are the package ``tallyclient``
of a distribution of its own, ``tallyclient`` (client/pyproject.toml).  The plugin is
found through the installed metadata alone (entry points ``openstack.cli.extension``
and ``openstack.tally.v1``): these tests check that they are installed as
client/pyproject.toml declares them and load what OSC expects.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import tomllib
from pathlib import Path

import pytest

TOP_LEVEL = ("mapping", "tally_common", "collector", "reporting", "simcloud")
REPO_ROOT = Path(__file__).resolve().parents[3]
CLIENT_ROOT = REPO_ROOT / "client"


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_each_top_level_name_belongs_to_tally_alone(name: str) -> None:
    owners = set(importlib.metadata.packages_distributions().get(name, []))
    assert owners == {"tally"}, f"{name!r} is provided by {sorted(owners)}, not by tally alone"


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_each_top_level_name_imports_this_tree(name: str) -> None:
    module = importlib.import_module(name)
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().is_relative_to(REPO_ROOT), module.__file__


def test_the_client_package_belongs_to_the_client_distribution_alone() -> None:
    owners = set(importlib.metadata.packages_distributions().get("tallyclient", []))
    assert owners == {"tallyclient"}, f"tallyclient is provided by {sorted(owners)}"
    module = importlib.import_module("tallyclient")
    assert module.__file__ is not None
    assert Path(module.__file__).resolve().is_relative_to(CLIENT_ROOT), module.__file__


def test_the_server_distribution_declares_nothing_of_the_client() -> None:
    requires = importlib.metadata.distribution("tally").requires or []
    assert not [line for line in requires if "tallyclient" in line], requires
    server_scripts = importlib.metadata.distribution("tally").entry_points.select(
        group="console_scripts")
    assert "tally" not in server_scripts.names, "tally is the client distribution's script"


def test_the_alembic_directory_does_not_shadow_the_library() -> None:
    import alembic

    assert not (REPO_ROOT / "alembic" / "__init__.py").exists()
    assert alembic.__file__ is not None
    assert not Path(alembic.__file__).resolve().is_relative_to(REPO_ROOT / "alembic")


def _declared_entry_points(group: str) -> dict[str, str]:
    """``group`` as client/pyproject.toml declares it: {name: "module[:attr]"}."""
    project = tomllib.loads((CLIENT_ROOT / "pyproject.toml").read_text())["project"]
    return dict(project["entry-points"][group])


def _installed_entry_points(group: str) -> dict[str, importlib.metadata.EntryPoint]:
    """``group`` in the installed client's metadata (what OSC's stevedore reads)."""
    found = importlib.metadata.distribution("tallyclient").entry_points.select(group=group)
    return {entry.name: entry for entry in found}


@pytest.mark.parametrize("group", ["openstack.cli.extension", "openstack.tally.v1"])
def test_the_openstack_plugin_entry_points_are_installed(group: str) -> None:
    installed = {name: entry.value for name, entry in _installed_entry_points(group).items()}
    assert installed, f"no {group} entry point installed: reinstall (pip install -e ./client)"
    assert installed == _declared_entry_points(group), (
        "the installed metadata differs from client/pyproject.toml: reinstall "
        "(pip install -e ./client)")


def test_the_openstack_plugin_module_is_what_osc_loads() -> None:
    (extension,) = _installed_entry_points("openstack.cli.extension").values()
    plugin = extension.load()
    assert plugin.API_NAME == extension.name == "tally"
    # OSC reads the version option and the versions, then the commands of each
    # version from the group openstack.<API_NAME>.v<version>.
    assert plugin.API_VERSION_OPTION == "os_tally_api_version"
    assert plugin.DEFAULT_API_VERSION in plugin.API_VERSIONS
    assert callable(plugin.make_client) and callable(plugin.build_option_parser)
    for version in plugin.API_VERSIONS:
        assert _installed_entry_points(f"openstack.{plugin.API_NAME}.v{version}")


@pytest.mark.parametrize("name", sorted(_declared_entry_points("openstack.tally.v1")))
def test_each_openstack_command_resolves_to_a_command_class(name: str) -> None:
    from cliff.command import Command

    command = _installed_entry_points("openstack.tally.v1")[name].load()
    assert inspect.isclass(command) and issubclass(command, Command), command
    assert not inspect.isabstract(command), f"{name}: {command} leaves methods abstract"
