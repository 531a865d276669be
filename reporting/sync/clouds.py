"""Tally's clouds file (``tally-clouds.yaml``): which clouds a sync may run for, and
with which adapter.

Names, platforms and adapters are checked when the file is read (a bad file stops
the service, naming the entry).  ``adapter_config`` is the adapter's own business
and is parsed strictly at the first sync of the cloud.  OpenStack's ``clouds.yaml``
(credentials, read by the adapter) is another file: one given in place of the other
is recognised and named.  ``clock: simulated`` marks a cloud whose clock is not the
wall clock (``tally-simcloud``): a sync of it must be told its instant, and with
``clock_url`` (the simulated clock) an instant the cloud has not reached is refused.

An entry whose ``adapter_config`` names no credentials (no ``os_cloud``) is a cloud
that is collected but not reconciled: its events are accepted, and no sync runs for
it (``tally-sync`` skips it; ``POST /internal/sync`` answers 409 ``not_reconciled``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final
from urllib.parse import urlsplit

import yaml

from mapping.event import MAX_ID_LEN, route_problem
from reporting.sync.observation import Adapter
from reporting.yaml_errors import where_and_why


class CloudsFileError(ValueError):
    """The clouds file cannot be used; the message names the file and the entry."""


@dataclasses.dataclass(frozen=True)
class CloudEntry:
    name: str
    platform: str
    adapter: str
    adapter_config: Any
    clock: str = "wall"  # "simulated": every sync must be told its instant (?at=)
    # A simulated cloud's clock document (GET answers {"at": RFC 3339, "start": ...}):
    # a told instant beyond it is refused (reporting.sync.told_instant).
    clock_url: str | None = None
    # False: collected (its events are accepted) but never reconciled: no credentials.
    reconciled: bool = True


CLOCKS = ("wall", "simulated")

AdapterFactory = Callable[[CloudEntry, float], Adapter]


def _openstack(entry: CloudEntry, budget_s: float) -> Adapter:
    from reporting.openstack.adapter import OpenStackAdapter

    return OpenStackAdapter(entry.name, entry.adapter_config, budget_s=budget_s)


# adapter name -> (the platform it serves, its factory)
ADAPTERS: Final[Mapping[str, tuple[str, AdapterFactory]]] = MappingProxyType({
    "openstack": ("openstack", _openstack),
})


def build_adapter(entry: CloudEntry, budget_s: float) -> Adapter:
    return ADAPTERS[entry.adapter][1](entry, budget_s)


# The adapter setting naming a cloud's credentials; without it a cloud is not reconciled.
CREDENTIALS_SETTING: Final[Mapping[str, str]] = MappingProxyType({"openstack": "os_cloud"})


def _reconciled(where: str, adapter: str, config: Any) -> bool:
    """Whether the entry is reconciled: its ``adapter_config`` names credentials.  A
    config holding other settings but no credentials is refused (a misspelt
    ``os_cloud`` must not silently stop the cloud's reconciliation)."""
    setting = CREDENTIALS_SETTING[adapter]
    if config is None:
        return False
    if not isinstance(config, Mapping):
        return True  # the adapter refuses it at the first sync, naming it
    if setting in config:
        return True
    if config:
        raise CloudsFileError(
            f"{where}: adapter_config has no {setting}, so the cloud would be collected but "
            f"not reconciled, yet it holds {', '.join(sorted(map(str, config)))}: add "
            f"{setting} to reconcile it, or leave adapter_config out to collect it only")
    return False


def _entry(path: str, index: int, raw: Any) -> CloudEntry:
    where = f"clouds file {path}: entry {index + 1}"
    if not isinstance(raw, Mapping):
        raise CloudsFileError(f"{where} is not a mapping")
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_ID_LEN:
        raise CloudsFileError(f"{where}: name must be a non-empty string of at most 255 chars")
    where = f"clouds file {path}: cloud {name!r}"
    problem = route_problem(name)
    if problem is not None:
        raise CloudsFileError(f"{where}: name {problem}")
    unknown = sorted(set(raw) - {"name", "platform", "adapter", "adapter_config", "clock",
                                 "clock_url"})
    if unknown:
        raise CloudsFileError(f"{where}: unknown key(s) {', '.join(map(str, unknown))}")
    clock = raw.get("clock", "wall")
    if clock not in CLOCKS:
        raise CloudsFileError(f"{where}: clock {clock!r} is not one of {', '.join(CLOCKS)}")
    clock_url = _clock_url(where, clock, raw.get("clock_url"))
    adapter = raw.get("adapter")
    if not isinstance(adapter, str) or adapter not in ADAPTERS:
        raise CloudsFileError(
            f"{where}: adapter {adapter!r} is not one of {', '.join(sorted(ADAPTERS))}"
        )
    platform = raw.get("platform")
    problem = route_problem(platform) if isinstance(platform, str) else None
    if problem is not None:
        raise CloudsFileError(f"{where}: platform {platform!r} {problem}")
    if platform != ADAPTERS[adapter][0]:
        raise CloudsFileError(
            f"{where}: platform {platform!r} is not the platform of adapter {adapter!r} "
            f"({ADAPTERS[adapter][0]!r})"
        )
    config = raw.get("adapter_config")
    return CloudEntry(name, str(platform), adapter, config, clock, clock_url,
                      reconciled=_reconciled(where, adapter, config))


def _clock_url(where: str, clock: str, value: Any) -> str | None:
    if value is None:
        return None
    if clock != "simulated":
        raise CloudsFileError(f"{where}: clock_url is the clock of a simulated cloud: "
                              "it needs clock: simulated (a wall-clock cloud has none)")
    parts = urlsplit(value) if isinstance(value, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise CloudsFileError(f"{where}: clock_url {value!r} is not an http:// or https:// "
                              "URL (tally-simcloud's is http://HOST:PORT/_sim/clock)")
    return str(value)


def _yaml_error(path: str, exc: yaml.YAMLError) -> CloudsFileError:
    return CloudsFileError(f"clouds file {path} is not valid YAML{where_and_why(exc)}")


def _refuse_openstack_clouds_yaml(path: str, clouds: Any) -> None:
    """OpenStack's clouds.yaml maps entry names to credentials under 'clouds'."""
    if isinstance(clouds, Mapping):
        raise CloudsFileError(
            f"clouds file {path} looks like OpenStack's clouds.yaml (its 'clouds' maps "
            f"names such as {next(iter(clouds), '?')!r} to credentials): [sync] "
            "clouds_file names Tally's clouds file (tally-clouds.yaml, a list of "
            "{name, platform, adapter, adapter_config}); OpenStack's clouds.yaml is "
            "found through OS_CLIENT_CONFIG_FILE")


def load_clouds_file(path: str | None) -> dict[str, CloudEntry]:
    """The clouds by name; an unset path means no clouds."""
    if not path:
        return {}
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise CloudsFileError(f"clouds file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise _yaml_error(path, exc) from None
    if isinstance(document, Mapping):
        _refuse_openstack_clouds_yaml(path, document.get("clouds"))
    if not isinstance(document, Mapping) or not isinstance(document.get("clouds"), list):
        raise CloudsFileError(f"clouds file {path} must hold a list under 'clouds'")
    clouds: dict[str, CloudEntry] = {}
    for index, raw in enumerate(document["clouds"]):
        entry = _entry(path, index, raw)
        if entry.name in clouds:
            raise CloudsFileError(f"clouds file {path}: cloud {entry.name!r} is listed twice")
        clouds[entry.name] = entry
    return clouds
