"""The operator documentation names only options and endpoints the code has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.unit.ops import catalogue

DOCS = [catalogue.REPO_ROOT / "docs" / "deployment.md",
        catalogue.REPO_ROOT / "docs" / "canonical-event.md",
        *sorted((catalogue.REPO_ROOT / "docs" / "runbooks").glob("*.md"))]
_OPTION = re.compile(r"\[([a-z_]+)\] ([a-z_]+)")
_ENDPOINT = re.compile(r"\b(GET|POST|PUT) (/[\w/{}<>.-]*)")


def _ids(paths: list[Path]) -> list[str]:
    return [path.relative_to(catalogue.REPO_ROOT).as_posix() for path in paths]


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_options_named_exist(path: Path) -> None:
    known = catalogue.option_names("reporting") | catalogue.option_names("collector")
    named = set(_OPTION.findall(" ".join(path.read_text().split())))
    for group, option in sorted(named):
        assert (group, option) in known, f"{path.name}: [{group}] {option}"


def _routes() -> list[tuple[str, re.Pattern[str]]]:
    from reporting.app import create_app
    from reporting.cmd import load_conf

    conf = load_conf([], prog="ops-docs-test", config_files=[])
    conf.set_override("auth_strategy", "noauth", group="api")
    conf.set_override("connection", "sqlite://", group="database")
    app = create_app(conf)
    routes = []
    for rule in app.url_map.iter_rules():
        pattern = re.sub(r"<[^>]+>", "[^/]+", rule.rule)
        for method in rule.methods or ():
            routes.append((method, re.compile(pattern + "$")))
    return routes


@pytest.mark.parametrize("path", DOCS, ids=_ids(DOCS))
def test_endpoints_named_exist(path: Path) -> None:
    routes = _routes()
    for method, raw in _ENDPOINT.findall(path.read_text()):
        concrete = re.sub(r"\{[^}]+\}|<[^>]+>", "x", raw.split("?")[0])
        assert any(m == method and pattern.match(concrete) for m, pattern in routes), (
            f"{path.name}: {method} {raw}")


def _deployed_commands() -> set[str]:
    commands: set[str] = set()
    for unit in (catalogue.REPO_ROOT / "deploy" / "systemd").glob("*.service"):
        for line in unit.read_text().splitlines():
            if line.startswith("ExecStart="):
                commands.add(line.split("=", 1)[1].split()[0].rsplit("/", 1)[-1])
    from tests.unit.ops.kustomize import all_kustomizations, containers, objects, pod_spec

    for kustomization in all_kustomizations():
        for obj in objects(kustomization):
            spec = pod_spec(obj)
            for container in containers(spec or {}):
                commands.add(container["command"][0])
    return commands


def test_every_command_the_deployment_runs_exists() -> None:
    import importlib

    targets = catalogue.console_script_targets()
    commands = _deployed_commands()
    assert commands == {"tally-reporting", "tally-manage", "tally-collector", "tally-sync"}
    for command in sorted(commands):
        module, _, function = targets[command].partition(":")
        assert callable(getattr(importlib.import_module(module), function)), command


def _without_auth_plugin_options(block: str) -> str:
    """keystonemiddleware registers the options of its auth plugin (username,
    password, ...) at run time from ``[keystone_authtoken] auth_type``: check those
    against that plugin, and leave them out for the check of the component's own."""
    from keystoneauth1 import loading

    auth_type = re.search(r"^\[keystone_authtoken\]$.*?^auth_type = (\S+)$", block,
                          flags=re.S | re.M)
    if auth_type is None:
        return block
    plugin = {opt.dest for opt in loading.get_auth_plugin_conf_options(auth_type.group(1))}
    kept, section = [], None
    for line in block.splitlines(keepends=True):
        if line.startswith("["):
            section = line.strip()
        name = line.split("=", 1)[0].strip()
        if not (section == "[keystone_authtoken]" and "=" in line and name in plugin):
            kept.append(line)
    return "".join(kept)


def test_example_configuration_files_are_valid(tmp_path: Path) -> None:
    text = (catalogue.REPO_ROOT / "docs" / "deployment.md").read_text()
    blocks = re.findall(r"```ini\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 6
    for index, block in enumerate(blocks):
        component = "collector" if "[collector]" in block else "reporting"
        path = tmp_path / f"example-{index}.conf"
        path.write_text(_without_auth_plugin_options(block))
        catalogue.load_component_conf(component, path)
