"""The adapter's own settings (``adapter_config`` of an entry of Tally's clouds file), parsed strictly.

Nothing validates them when the process starts: the framework has no hook for an
adapter's settings, so a mistake surfaces on the first sync of that cloud, which
aborts naming the setting.

``services`` names the catalog service types the cloud runs; a type whose service is
not named is not observed (so never reconciled, never deleted by absence).  Unset:
the four core services, and ``load-balancer`` with the deprecated ``include_octavia``.

``accounts_by_domain`` (a template such as ``"{cloud}-{domain_id}"``) makes every run
list keystone's projects and name each project's default billing account after its
domain (``reporting.billing.default_accounts``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from reporting.sync.observation import RunAborted

KNOWN_KEYS = ("os_cloud", "services", "include_octavia", "accounts_by_domain")
# The names an accounts_by_domain template may use.
TEMPLATE_NAMES = ("{cloud}", "{domain_id}")
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
    accounts_by_domain: str | None = None

    def domain_account(self, cloud: str, domain_id: str) -> str:
        """The account a project of keystone domain ``domain_id`` defaults to."""
        assert self.accounts_by_domain is not None
        return (self.accounts_by_domain.replace("{cloud}", cloud)
                .replace("{domain_id}", domain_id))

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
    return OpenStackSettings(os_cloud=os_cloud, services=_services(config),
                             accounts_by_domain=_template(config.get("accounts_by_domain")))


def _template(value: Any) -> str | None:
    """An ``accounts_by_domain`` template: text naming ``{domain_id}`` (so each domain
    gets an account of its own), and no other ``{...}``."""
    if value is None:
        return None
    names = ", ".join(TEMPLATE_NAMES)
    if not isinstance(value, str) or "{domain_id}" not in value:
        raise RunAborted(f"adapter_config: accounts_by_domain must be text naming "
                         f"{{domain_id}}, e.g. \"{{cloud}}-{{domain_id}}\" (it may use {names})")
    rest = value
    for name in TEMPLATE_NAMES:
        rest = rest.replace(name, "")
    if "{" in rest or "}" in rest:
        raise RunAborted(f"adapter_config: accounts_by_domain {value!r} uses a name other "
                         f"than {names}")
    return value
