"""The settings of one simulated world (docs/simcloud.md).

A world is a pure function of its :class:`WorldConfig`: the same seed and scale give
the same resources, histories, ids and notification message ids.  Only the
notification delivery faults (loss, duplication, reordering) draw from a second
seeded stream, so they too repeat for the same sequence of clock moves.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

DEFAULT_START = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
STOCK_EXCHANGES = ("nova", "cinder", "neutron", "glance", "octavia")
API_SERVICE_TYPES = ("compute", "block-storage", "network", "image", "load-balancer")


DEFAULT_PAGE_CAP = 1000
NOVA_MIN_VERSION = (2, 1)
NOVA_MAX_VERSION = (2, 104)


class ConfigError(ValueError):
    """A world setting out of range."""


def parse_microversion(text: str) -> tuple[int, int]:
    """``"2.38"`` -> (2, 38), within what the simulated nova knows (2.1-2.104)."""
    parts = str(text).split(".")
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise ConfigError(f"nova_max_microversion must look like 2.38, got {text!r}")
    version = (int(parts[0]), int(parts[1]))
    if not NOVA_MIN_VERSION <= version <= NOVA_MAX_VERSION:
        raise ConfigError(f"nova_max_microversion must be within 2.1-2.104, got {text}")
    return version


@dataclasses.dataclass(frozen=True)
class WorldConfig:
    """Everything that decides a simulated world and how it publishes.

    ``scale`` is the number of live resources at any instant (spread over the five
    types); ``start`` is the first instant of the simulated month and where the
    virtual clock starts.  Resources existing at ``start`` were created before it
    (a cloud Tally is installed on is never empty) unless ``empty_start`` is set,
    in which case they are created during the first day and every one of them is
    announced by notifications.

    Notifications go to ``transport`` (an already built oslo.messaging notification
    transport, e.g. the demo's shared ``fake://`` one) or to a transport built from
    ``transport_url``; with neither, moving the clock publishes nothing.
    """

    seed: int = 1
    scale: int = 100
    start: dt.datetime = DEFAULT_START
    days: int = 30
    empty_start: bool = False
    # Fraction of live resources created (and as many deleted) per simulated day.
    daily_turnover: float = 0.02
    # Operations (power off/on, resize, retype, ...) per live resource per day.
    daily_operations: float = 0.06
    # Fraction of images created with os_hidden=true, and without an owner.
    hidden_image_fraction: float = 0.05
    ownerless_image_fraction: float = 0.0
    # Notification delivery faults.
    loss: float = 0.0
    duplicate: float = 0.0
    reorder: bool = False
    reorder_window: int = 20
    transport_url: str | None = None
    transport: Any = None
    # Exchange per service, overriding the stock names (nova, cinder, neutron, glance,
    # octavia) as a deployment's control_exchange would; tests sharing a broker use it.
    exchanges: dict[str, str] = dataclasses.field(default_factory=dict)
    # keystonemiddleware's [keystone_authtoken] service_type per API (catalog type ->
    # configured type); by default each API's own catalog type.  An application
    # credential with access rules is refused (401) by an API whose configured type is
    # empty or not in the catalog: kolla renders "volume" for cinder, for instance.
    authtoken_service_types: dict[str, str] = dataclasses.field(default_factory=dict)
    # Each API's own cap on a page, below the limit a client asks for (catalog type ->
    # items): nova [api] max_limit, cinder osapi_max_limit, glance api_limit_max,
    # neutron and octavia pagination_max_limit.  Unset: 1000 each (neutron: none).
    page_caps: dict[str, int] = dataclasses.field(default_factory=dict)
    # What a page of a listing costs each API (catalog type -> (seconds per page,
    # seconds per item on it)): the time a real service spends answering, which the
    # simulated one otherwise does not.  Unset: nothing added.
    page_latencies: dict[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    # The highest microversion nova's version document names and nova accepts
    # ("2.38": a nova before Pike, without embedded flavors or down-cell records).
    nova_max_microversion: str = "2.104"
    # Services the cloud does not run (catalog types of API_SERVICE_TYPES, but never
    # compute): left out of keystone's catalog, their URLs answer 404.  The world still
    # generates its resources of every type; only the API is missing.
    absent_services: frozenset[str] = frozenset()
    admin_password: str = "simcloud-admin"  # noqa: S105 - a simulated cloud's account
    member_password: str = "simcloud-member"  # noqa: S105
    service_password: str = "simcloud-service"  # noqa: S105

    def __post_init__(self) -> None:
        if self.scale < 0:
            raise ConfigError(f"scale must be >= 0, got {self.scale}")
        if self.days < 1:
            raise ConfigError(f"days must be >= 1, got {self.days}")
        for name in ("loss", "duplicate", "hidden_image_fraction",
                     "ownerless_image_fraction", "daily_turnover"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{name} must be within [0, 1], got {value}")
        if self.daily_operations < 0:
            raise ConfigError(f"daily_operations must be >= 0, got {self.daily_operations}")
        if self.reorder_window < 2:
            raise ConfigError(f"reorder_window must be >= 2, got {self.reorder_window}")
        if self.start.tzinfo is None:
            raise ConfigError("start must be an aware datetime (UTC)")
        unknown_apis = set(self.authtoken_service_types) - set(API_SERVICE_TYPES)
        if unknown_apis:
            raise ConfigError(f"authtoken_service_types: unknown APIs {sorted(unknown_apis)}; "
                              f"one of {', '.join(API_SERVICE_TYPES)}")
        unknown_caps = set(self.page_caps) - set(API_SERVICE_TYPES)
        if unknown_caps:
            raise ConfigError(f"page_caps: unknown APIs {sorted(unknown_caps)}; "
                              f"one of {', '.join(API_SERVICE_TYPES)}")
        for service, cap in self.page_caps.items():
            if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
                raise ConfigError(f"page_caps: {service} must be a whole number >= 1, "
                                  f"got {cap!r}")
        unknown_latencies = set(self.page_latencies) - set(API_SERVICE_TYPES)
        if unknown_latencies:
            raise ConfigError(f"page_latencies: unknown APIs {sorted(unknown_latencies)}; "
                              f"one of {', '.join(API_SERVICE_TYPES)}")
        for service, (per_page, per_item) in self.page_latencies.items():
            if per_page < 0 or per_item < 0:
                raise ConfigError(f"page_latencies: {service} must cost >= 0 s, got "
                                  f"{per_page!r} per page and {per_item!r} per item")
        parse_microversion(self.nova_max_microversion)
        absent = set(self.absent_services)
        if absent - set(API_SERVICE_TYPES) or "compute" in absent:
            raise ConfigError(f"absent_services: {sorted(absent)}; each one of "
                              f"{', '.join(t for t in API_SERVICE_TYPES if t != 'compute')}")
        unknown = set(self.exchanges) - set(STOCK_EXCHANGES)
        if unknown:
            raise ConfigError(f"exchanges: unknown services {sorted(unknown)}; "
                              f"one of {', '.join(STOCK_EXCHANGES)}")
        if self.transport is not None and self.transport_url is not None:
            raise ConfigError("give transport or transport_url, not both")

    def page_latency(self, service: str, items: int) -> float:
        """Seconds a page of ``items`` costs ``service`` (0 without a latency model)."""
        per_page, per_item = self.page_latencies.get(service, (0.0, 0.0))
        return per_page + per_item * items

    def page_cap(self, service: str, default: int | None = DEFAULT_PAGE_CAP) -> int | None:
        """The most items ``service`` answers on a page; None for no cap."""
        return self.page_caps.get(service, default)

    @property
    def nova_max_version(self) -> tuple[int, int]:
        return parse_microversion(self.nova_max_microversion)

    def authtoken_service_type(self, service: str) -> str:
        return self.authtoken_service_types.get(service, service)

    def exchange(self, service: str) -> str:
        return self.exchanges.get(service, service)

    @property
    def end(self) -> dt.datetime:
        return self.start + dt.timedelta(days=self.days)
