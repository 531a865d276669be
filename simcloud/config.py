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


class ConfigError(ValueError):
    """A world setting out of range."""


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

    def authtoken_service_type(self, service: str) -> str:
        return self.authtoken_service_types.get(service, service)

    def exchange(self, service: str) -> str:
        return self.exchanges.get(service, service)

    @property
    def end(self) -> dt.datetime:
        return self.start + dt.timedelta(days=self.days)
