"""The adapter's own settings (``adapter_config`` of an entry of Tally's clouds file), parsed strictly.

Nothing validates them when the process starts: the framework has no hook for an
adapter's settings, so a mistake surfaces on the first sync of that cloud, which
aborts naming the setting.

``services`` names the catalog service types the cloud runs; a type whose service is
not named is not observed (so never reconciled, never deleted by absence).  Unset:
the four core services, and ``load-balancer`` with the deprecated ``include_octavia``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from reporting.sync.observation import RunAborted

KNOWN_KEYS = ("os_cloud", "services", "include_octavia")
# Catalog service type -> the resource types it serves.
SERVICE_TYPES: Mapping[str, tuple[str, ...]] = {
    "compute": ("instance",),
    "block-storage": ("volume",),
    "network": ("floating_ip",),
    "image": ("image",),
    "load-balancer": ("loadbalancer",),
}
CORE_SERVICES = frozenset({"compute", "block-storage", "network", "image"})


@dataclasses.dataclass(frozen=True)
class OpenStackSettings:
    os_cloud: str
    services: frozenset[str] = CORE_SERVICES

    @property
    def include_octavia(self) -> bool:
        return "load-balancer" in self.services


def _services(config: Mapping[str, Any]) -> frozenset[str]:
    if "services" in config and "include_octavia" in config:
        raise RunAborted("adapter_config: give services or include_octavia, not both "
                         "(include_octavia is the deprecated spelling of 'load-balancer' "
                         "in services)")
    if "services" not in config:
        include_octavia = config.get("include_octavia", False)
        if not isinstance(include_octavia, bool):
            raise RunAborted("adapter_config: include_octavia must be true or false")
        return CORE_SERVICES | ({"load-balancer"} if include_octavia else set())
    services = config["services"]
    known = ", ".join(SERVICE_TYPES)
    if not isinstance(services, list) or not all(isinstance(s, str) for s in services):
        raise RunAborted(f"adapter_config: services must be a list of catalog service "
                         f"types (of {known})")
    unknown = sorted(set(services) - set(SERVICE_TYPES))
    if unknown:
        raise RunAborted(f"adapter_config: services: unknown service type(s) "
                         f"{', '.join(map(repr, unknown))} (known: {known})")
    if "compute" not in services:
        raise RunAborted("adapter_config: services must include compute: every run first "
                         "asks nova whether the account sees every project")
    return frozenset(services)


def parse_settings(config: Any) -> OpenStackSettings:
    """Parse ``adapter_config``; an unknown key, a missing os_cloud or a wrong type aborts."""
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise RunAborted("adapter_config: must be a mapping")
    for key in config:
        if key not in KNOWN_KEYS:
            raise RunAborted(
                f"adapter_config: unknown setting {key!r} (known: {', '.join(KNOWN_KEYS)})"
            )
    os_cloud = config.get("os_cloud")
    if not isinstance(os_cloud, str) or not os_cloud.strip():
        raise RunAborted("adapter_config: os_cloud is required and must name a clouds.yaml entry")
    return OpenStackSettings(os_cloud=os_cloud, services=_services(config))
