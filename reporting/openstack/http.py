"""keystoneauth plumbing of one run: per-service adapters, the budget, pagination.

Every request runs inside the run's budget: its timeout is what is left of it, and
a request the budget does not cover is not sent.  Each service paginates its own
way (nova and cinder link every full page, neutron a full last page too and
everything without a ``limit``, octavia's links drop filters, glance's ``next`` is a
relative path; each caps the ``limit`` asked for and links the capped page); we
only ever take the ``marker`` out of a next link and rebuild the request on our own
endpoint, so a link's host, a dropped filter (octavia) or a relative ``/v2`` path
(glance) cannot mislead us.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable, Iterator
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ks_session
from openstack.config import cloud_region

from reporting.openstack.errors import ServiceNotInCatalog, from_http_error
from reporting.sync.observation import RunAborted

PAGE_SIZE = 1000
_VERSIONED = re.compile(r"/v\d+(\.\d+)?(/[^/]*)?/?$")


class BudgetExceeded(RunAborted):
    """The run's budget ran out before the cloud was observed."""


class Budget:
    def __init__(self, deadline: float, budget_s: float) -> None:
        self.deadline = deadline
        self.budget_s = budget_s

    def remaining(self) -> float:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise BudgetExceeded(
                f"the run did not fit its budget of {self.budget_s:g} s "
                "([sync] budget_s / TALLY_REPORTING_SYNC_BUDGET_S)"
            )
        return left


class ServiceClient:
    """One keystoneauth Adapter plus the run's budget.

    Its errors say what the service said (``errors.ServiceAnswered``) or that the
    catalog has no such service (``errors.ServiceNotInCatalog``)."""

    def __init__(self, adapter: ks_adapter.Adapter, budget: Budget,
                 service_type: str | None = None) -> None:
        self.adapter = adapter
        self.budget = budget
        self.service_type = service_type or adapter.service_type or "service"

    def not_in_catalog(self) -> ServiceNotInCatalog:
        return ServiceNotInCatalog(self.service_type, self.adapter.interface,
                                   self.adapter.region_name)

    def endpoint_data(self) -> Any:
        """keystoneauth's EndpointData of the service (its version discovery)."""
        try:
            data = self.adapter.get_endpoint_data()
        except ks_exceptions.EndpointNotFound:
            raise self.not_in_catalog() from None
        if data is None:
            raise self.not_in_catalog()
        return data

    def get_json(self, path: str, params: dict[str, Any] | None = None,
                 microversion: str | None = None) -> Any:
        try:
            response = self.adapter.get(
                path, params=params, microversion=microversion,
                timeout=self.budget.remaining(), raise_exc=True,
            )
        except ks_exceptions.EndpointNotFound:
            raise self.not_in_catalog() from None
        except ks_exceptions.HttpError as exc:
            raise from_http_error(exc, self.service_type, path) from None
        return response.json()

    def versioned(self, prefix: str, path: str) -> str:
        """``path`` under ``prefix`` unless the catalog endpoint already names a version."""
        try:
            endpoint = self.adapter.get_endpoint() or ""
        except ks_exceptions.EndpointNotFound:
            raise self.not_in_catalog() from None
        if _VERSIONED.search(urlsplit(endpoint).path):
            return path
        return f"{prefix}/{path}"


# Retries when the clouds.yaml entry sets none: one transient error (a 503 while a
# service restarts, a dropped connection) must not make a type incomplete and fail
# the run.  keystoneauth backs off 0.5 s, 1 s, ... between attempts.
DEFAULT_CONNECT_RETRIES = 2
DEFAULT_STATUS_CODE_RETRIES = 2


def retry_options(region: cloud_region.CloudRegion, service_type: str) -> dict[str, Any]:
    """keystoneauth's adapter retry options of ``service_type``, as openstacksdk's
    ``CloudRegion.get_session_client`` reads them from the clouds.yaml entry
    (``connect_retries``, ``connect_retry_delay``, ``status_code_retries``,
    ``status_code_retry_delay``, ``retriable_status_codes``, each also per service:
    ``block_storage_status_code_retries``).  Unset retriable codes are keystoneauth's
    own default (503); unset delays its exponential backoff."""
    connect = region.get_connect_retries(service_type)
    status = region.get_status_code_retries(service_type)
    return {
        "connect_retries": DEFAULT_CONNECT_RETRIES if connect is None else connect,
        "connect_retry_delay": region.get_connect_retry_delay(service_type),
        "status_code_retries": DEFAULT_STATUS_CODE_RETRIES if status is None else status,
        "status_code_retry_delay": region.get_status_code_retry_delay(service_type),
        "retriable_status_codes": region.get_retriable_status_codes(service_type),
    }


class IdentityRetrySession(ks_session.Session):
    """A keystoneauth Session whose requests made outside any adapter retry with the
    identity service's options.

    The identity plugin sends the token request (``POST /v3/auth/tokens``) and its
    version discovery straight through the session, which keystoneauth retries only
    with options given per request; every adapter passes its own, so what reaches
    ``request`` without a service type is the plugin's."""

    def __init__(self, *args: Any, identity_retries: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._identity_retries = {k: v for k, v in identity_retries.items() if v is not None}

    # Every argument is passed on unchanged but the retry defaults: the override takes
    # them as keywords rather than repeating keystoneauth's thirty parameters.
    def request(self, url: str, method: str, **kwargs: Any) -> Any:  # type: ignore[override]
        endpoint_filter = kwargs.get("endpoint_filter") or {}
        if not endpoint_filter.get("service_type"):
            for name, value in self._identity_retries.items():
                kwargs.setdefault(name, value)
        return super().request(url, method, **kwargs)


def retrying_session(region: cloud_region.CloudRegion) -> ks_session.Session:
    """The run's keystoneauth session (``region.get_session()``), built so that the
    token request retries like every other request of the run."""
    constructor = functools.partial(IdentityRetrySession,
                                    identity_retries=retry_options(region, "identity"))
    region.set_session_constructor(cast(type[ks_session.Session], constructor))
    return region.get_session()


def make_client(
    region: cloud_region.CloudRegion, session: ks_session.Session, service_type: str,
    budget: Budget,
) -> ServiceClient:
    adapter = ks_adapter.Adapter(
        session,
        service_type=service_type,
        interface=region.get_interface(service_type),
        region_name=region.get_region_name(service_type),
        endpoint_override=region.get_endpoint(service_type),
        **retry_options(region, service_type),
    )
    return ServiceClient(adapter, budget, service_type)


def marker_of(link: str | None) -> str | None:
    """The ``marker`` query parameter of a next link, absolute or relative."""
    if not link:
        return None
    values = parse_qs(urlsplit(link).query).get("marker")
    return values[0] if values else None


def next_link(body: dict[str, Any], links_key: str | None) -> str | None:
    """The ``rel == next`` href of ``links_key``, or glance's top-level ``next``."""
    if links_key is None:
        value = body.get("next")
        return value if isinstance(value, str) else None
    for link in body.get(links_key) or ():
        if isinstance(link, dict) and link.get("rel") == "next":
            href = link.get("href")
            return href if isinstance(href, str) else None
    return None


def paginate(
    client: ServiceClient,
    path: str,
    params: dict[str, Any],
    items_key: str,
    links_key: str | None,
    *,
    microversion: str | None = None,
    marker_from: Callable[[dict[str, Any]], str] = lambda item: str(item["id"]),
) -> Iterator[dict[str, Any]]:
    """Every item of a marker-paginated listing.

    A page that carries a next link is never the last, however short: a service
    caps the ``limit`` asked for at its own maximum (nova ``max_limit``, cinder
    ``osapi_max_limit``, glance ``api_limit_max``, neutron and octavia
    ``pagination_max_limit``) and links the capped page.  The listing ends on a page
    without a next link; neutron also links a full last page, and the page after it
    is empty and unlinked.  A next link without a marker falls back to the last
    item's id; a marker that does not move, or a link on an empty page that names
    none, is an unreadable listing (ValueError), never its end.
    """
    query = {**params, "limit": PAGE_SIZE}
    seen_markers: set[str] = set()
    while True:
        body = client.get_json(path, params=query, microversion=microversion)
        if not isinstance(body, dict) or not isinstance(body.get(items_key), list):
            raise ValueError(f"the {items_key} listing answered without a {items_key} list")
        items = body[items_key]
        yield from items
        link = next_link(body, links_key)
        if link is None:
            return
        marker = marker_of(link) or (marker_from(items[-1]) if items else None)
        if marker is None:
            raise ValueError(f"the {items_key} listing linked an empty page to a next "
                             "page without a marker")
        if marker in seen_markers:
            raise ValueError(f"the {items_key} listing repeated the marker {marker}")
        seen_markers.add(marker)
        query = {**params, "limit": PAGE_SIZE, "marker": marker}
