"""Fault switches: a service answering 503 or 401, slow responses, a down cell,
nova's version document unreadable.

Switches are read by every API request and flipped by tests or ``POST /_sim/faults``;
each flip replaces an immutable value, so readers never see half a change.
"""

from __future__ import annotations

import dataclasses
import zlib
from typing import Any

# The services a fault can target: the catalog's service types.
SERVICES = ("identity", "compute", "block-storage", "network", "image", "load-balancer")
STATUSES = (401, 503)


class FaultError(ValueError):
    """A fault switch that names no service or no supported fault."""


@dataclasses.dataclass(frozen=True)
class ServiceFault:
    status: int | None = None  # answer every request with this status
    delay_s: float = 0.0       # sleep this long before answering


class Faults:
    def __init__(self) -> None:
        self._services: dict[str, ServiceFault] = {}
        self._down_cell_fraction = 0.0
        self._nova_version_document: int | None = None

    def set(self, service: str, *, status: int | None = None, delay_s: float = 0.0) -> None:
        """Switch a fault on for ``service`` (a catalog type); both None/0 clears it."""
        if service not in SERVICES:
            raise FaultError(f"unknown service {service!r}; one of {', '.join(SERVICES)}")
        if status is not None and status not in STATUSES:
            raise FaultError(f"status must be one of {STATUSES}, got {status!r}")
        if not isinstance(delay_s, int | float) or not 0 <= delay_s <= 600:
            raise FaultError(f"delay_s must be a number within [0, 600], got {delay_s!r}")
        services = dict(self._services)
        if status is None and not delay_s:
            services.pop(service, None)
        else:
            services[service] = ServiceFault(status, float(delay_s))
        self._services = services

    def get(self, service: str) -> ServiceFault | None:
        return self._services.get(service)

    @property
    def down_cell_fraction(self) -> float:
        return self._down_cell_fraction

    @down_cell_fraction.setter
    def down_cell_fraction(self, value: float) -> None:
        if not isinstance(value, int | float) or not 0.0 <= value <= 1.0:
            raise FaultError(f"down_cell_fraction must be within [0, 1], got {value!r}")
        self._down_cell_fraction = float(value)

    @property
    def nova_version_document(self) -> int | None:
        """The status nova's version document (``/compute/v2.1``, ``/compute/v2.1/``)
        answers instead of itself: 401 as keystonemiddleware refusing a credential
        whose access rules do not name it, 503 as a proxy; None when it answers."""
        return self._nova_version_document

    @nova_version_document.setter
    def nova_version_document(self, status: int | None) -> None:
        if status is not None and status not in STATUSES:
            raise FaultError(f"nova_version_document must be one of {STATUSES} or null, "
                             f"got {status!r}")
        self._nova_version_document = status

    def in_down_cell(self, server_id: str) -> bool:
        """Whether a server sits in a cell nova cannot reach (a stable choice per id)."""
        fraction = self._down_cell_fraction
        if fraction <= 0.0:
            return False
        return zlib.crc32(server_id.encode()) / 0xFFFFFFFF < fraction

    def clear(self) -> None:
        self._services = {}
        self._down_cell_fraction = 0.0
        self._nova_version_document = None

    def document(self) -> dict[str, Any]:
        return {
            "services": {name: {"status": f.status, "delay_s": f.delay_s}
                         for name, f in sorted(self._services.items())},
            "down_cell_fraction": self._down_cell_fraction,
            "nova_version_document": self._nova_version_document,
        }

    def apply_document(self, body: Any) -> None:
        """Apply ``{"services": {name: {"status", "delay_s"}}, "down_cell_fraction",
        "nova_version_document"}``.

        Validates everything before changing anything.
        """
        if not isinstance(body, dict):
            raise FaultError("the body must be a JSON object")
        unknown = set(body) - {"services", "down_cell_fraction", "nova_version_document"}
        if unknown:
            raise FaultError(f"unknown members {sorted(unknown)}")
        staged = Faults()
        staged._services = dict(self._services)
        staged._down_cell_fraction = self._down_cell_fraction
        staged._nova_version_document = self._nova_version_document
        services = body.get("services", {})
        if not isinstance(services, dict):
            raise FaultError("services must be an object keyed by service type")
        for name, spec in services.items():
            if spec is None:
                spec = {}
            if not isinstance(spec, dict) or set(spec) - {"status", "delay_s"}:
                raise FaultError(f"services.{name} must be an object with status and/or delay_s")
            staged.set(name, status=spec.get("status"), delay_s=spec.get("delay_s", 0.0))
        if "down_cell_fraction" in body:
            staged.down_cell_fraction = body["down_cell_fraction"]
        if "nova_version_document" in body:
            staged.nova_version_document = body["nova_version_document"]
        self._services = staged._services
        self._down_cell_fraction = staged._down_cell_fraction
        self._nova_version_document = staged._nova_version_document
