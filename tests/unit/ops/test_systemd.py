"""The systemd units: they run Tally's own commands with real options, keep the
collector's buffer in the state directory, sync every 10 minutes, and are hardened."""

from __future__ import annotations

import re
import shlex
from pathlib import Path, PurePosixPath

import pytest

from tests.unit.ops import catalogue

UNITS = catalogue.REPO_ROOT / "deploy" / "systemd"
SERVICES = ("tally-reporting.service", "tally-collector.service", "tally-sync.service")
HARDENING = {
    "NoNewPrivileges": "yes",
    "ProtectSystem": "strict",
    "ProtectHome": "yes",
    "PrivateTmp": "yes",
    "PrivateDevices": "yes",
    "CapabilityBoundingSet": "",
    "RestrictSUIDSGID": "yes",
    "SystemCallArchitectures": "native",
}


def read_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """Section -> key -> every value (systemd keys may repeat)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None and "=" in line, f"{path}: {raw!r}"
        key, value = line.split("=", 1)
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def _service(name: str) -> dict[str, list[str]]:
    return read_unit(UNITS / name)["Service"]


def _environment(service: dict[str, list[str]]) -> dict[str, str]:
    env: dict[str, str] = {}
    for value in service.get("Environment", []):
        for assignment in shlex.split(value):
            key, _, val = assignment.partition("=")
            env[key] = val
    return env


def _command(service: dict[str, list[str]]) -> list[str]:
    (exec_start,) = service["ExecStart"]
    return shlex.split(exec_start)


def test_every_unit_is_known() -> None:
    assert {p.name for p in UNITS.iterdir()} == {
        *SERVICES, "tally-sync.timer", "tally.sysusers.conf"}


@pytest.mark.parametrize("name", SERVICES)
def test_runs_a_console_script_with_a_config_file(name: str) -> None:
    command = _command(_service(name))
    assert PurePosixPath(command[0]).name in catalogue.console_scripts()
    assert command[0].startswith("/")
    assert command[1] == "--config-file" and command[2].startswith("/etc/tally/")


def _documented_virtualenvs() -> set[str]:
    """Every virtualenv docs/deployment.md makes (``python3 -m venv DIR``)."""
    text = (catalogue.REPO_ROOT / "docs" / "deployment.md").read_text()
    return set(re.findall(r"python3 -m venv (\S+)", text))


@pytest.mark.parametrize("name", SERVICES)
def test_runs_the_command_from_the_documented_virtualenv(name: str) -> None:
    """ExecStart names a command setup.cfg declares, in the bin/ of the one virtualenv
    the install path of docs/deployment.md makes: the units work as shipped."""
    (virtualenv,) = _documented_virtualenvs()
    executable = PurePosixPath(_command(_service(name))[0])
    assert executable.name in catalogue.console_scripts(), executable
    assert executable.parent == PurePosixPath(virtualenv) / "bin", executable
    assert not re.search(r"sed .*ExecStart|sed .*/usr/bin/tally",
                         (catalogue.REPO_ROOT / "docs" / "deployment.md").read_text())


@pytest.mark.parametrize("name", SERVICES)
def test_is_hardened(name: str) -> None:
    service = _service(name)
    for key, value in HARDENING.items():
        assert service.get(key) == [value], (name, key)
    assert service["User"] == ["tally"]


@pytest.mark.parametrize("name", SERVICES)
def test_environment_overrides_name_real_options(name: str) -> None:
    command = PurePosixPath(_command(_service(name))[0]).name
    component = "collector" if command == "tally-collector" else "reporting"
    options = catalogue.option_names(component)
    for variable in _environment(_service(name)):
        option = catalogue.env_option(variable)
        if option is not None and variable != "OS_CLIENT_CONFIG_FILE":
            assert option in options, (name, variable)


def test_collector_buffer_lives_in_its_state_directory() -> None:
    service = _service("tally-collector.service")
    (state,) = service["StateDirectory"]
    buffer_dir = _environment(service)["OS_COLLECTOR__BUFFER_DIR"]
    assert PurePosixPath(buffer_dir).is_relative_to(f"/var/lib/{state}")


def test_reporting_pins_the_clouds_yaml() -> None:
    env = _environment(_service("tally-reporting.service"))
    assert env["OS_CLIENT_CONFIG_FILE"] == "/etc/openstack/clouds.yaml"


def test_sync_runs_once_every_ten_minutes() -> None:
    assert _service("tally-sync.service")["Type"] == ["oneshot"]
    timer = read_unit(UNITS / "tally-sync.timer")
    assert timer["Timer"]["OnCalendar"] == ["*:0/10"]
    assert timer["Install"]["WantedBy"] == ["timers.target"]
    assert "Unit" not in timer["Timer"]  # the default: tally-sync.service


def test_sysusers_creates_the_service_user() -> None:
    lines = [line.split() for line in (UNITS / "tally.sysusers.conf").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert [line[:2] for line in lines] == [["u", "tally"]]
