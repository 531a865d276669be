"""The OpenStack adapter: one run's observation of one cloud.

Order of a run: resolve the clouds.yaml entry, authenticate, negotiate nova's
microversion, probe that the account sees every project (one server across all
tenants), then the listings (instances with the deleted servers, volumes, floating
IPs, images, load balancers with ``include_octavia``), then cinder's volume types.
A failure a single type can carry costs that type its completeness; anything else
aborts the run before a type is observed (``RunAborted``).
"""

from __future__ import annotations

import collections
import dataclasses
import logging
from collections.abc import Callable, Mapping
from typing import Any

from keystoneauth1 import exceptions as ks_exceptions
from openstack.config import cloud_region

from mapping.event import format_timestamp
from mapping.openstack_rules import ImageData, image_data
from reporting.openstack import resources
from reporting.openstack.credentials import resolve_cloud
from reporting.openstack.http import (
    Budget,
    ServiceClient,
    make_client,
    paginate,
    retrying_session,
)
from reporting.openstack.kept_session import (
    KeptSession,
    SessionKeeper,
    process_keeper,
    settings_of,
)
from reporting.openstack.settings import OpenStackSettings, parse_settings
from reporting.sync.observation import (
    Observation,
    ObserveRequest,
    RunAborted,
    SizeNameEntry,
)

LOG = logging.getLogger(__name__)

PLATFORM = "openstack"
# 2.47 embeds each server's flavor; 2.69 answers servers of a down cell with a
# minimal UNKNOWN record instead of leaving them out.  Pinned, never "latest":
# from 2.75 nova refuses unknown query parameters.
WANTED_MICROVERSION = (2, 69)
EMBEDDED_FLAVOR = (2, 47)

# Failures a single listing can carry: HTTP errors, catalog lookups, unreadable bodies.
LISTING_ERRORS = (
    ks_exceptions.ClientException,
    resources.UnreadableResource,
    ValueError,
    KeyError,
    TypeError,
)


def _version_tuple(value: Any) -> tuple[int, int] | None:
    if isinstance(value, tuple) and len(value) == 2:
        return int(value[0]), int(value[1])
    return None


class OpenStackAdapter:
    platform = PLATFORM

    def __init__(
        self,
        cloud: str,
        adapter_config: Any,
        *,
        budget_s: float,
        environ: Mapping[str, str] | None = None,
        sessions: SessionKeeper | None = None,
    ) -> None:
        self.cloud = cloud
        self.adapter_config = adapter_config
        self.budget_s = budget_s
        self.environ = environ
        # The run process keeps its sessions between runs (reporting.openstack.kept_session).
        self.sessions = sessions if sessions is not None else process_keeper()

    def observe(self, request: ObserveRequest) -> Observation:
        settings = parse_settings(self.adapter_config)
        budget = Budget(request.deadline, self.budget_s)
        region = resolve_cloud(settings.os_cloud, self.environ)
        run = _Run(self.cloud, settings, region, budget, request, self.sessions)
        observation = run.observe()
        if run.kept is not None and self.sessions is not None and not observation.errors:
            self.sessions.keep(self.cloud, run.kept)
        return observation


class _Run:
    def __init__(self, cloud: str, settings: OpenStackSettings,
                 region: cloud_region.CloudRegion, budget: Budget,
                 request: ObserveRequest, sessions: SessionKeeper | None = None) -> None:
        self.cloud = cloud
        self.settings = settings
        self.region = region
        self.budget = budget
        self.request = request
        self.observation = Observation()
        self.sessions = sessions
        self.kept: KeptSession | None = None

    # --- run-level steps ---------------------------------------------------------------

    def _authenticate(self) -> Any:
        entry = self.settings.os_cloud
        try:
            session = self._session()
            session.timeout = self.budget.remaining()
            session.get_token()
        except RunAborted:
            raise
        except Exception as exc:  # keystoneauth and openstacksdk both raise here
            self.budget.remaining()
            raise RunAborted(f'authenticating against the cloud "{entry}": {exc}') from None
        return session

    def _session(self) -> Any:
        if self.sessions is None:
            return retrying_session(self.region)
        settings = settings_of(self.settings.os_cloud, self.region)
        self.kept = self.sessions.take(self.cloud, settings)
        if self.kept is None:
            self.kept = self.sessions.new(retrying_session(self.region), settings)
        return self.kept.session

    def _client(self, session: Any, service_type: str) -> ServiceClient:
        if self.kept is not None and service_type in self.kept.adapters:
            return ServiceClient(self.kept.adapters[service_type], self.budget)
        client = make_client(self.region, session, service_type, self.budget)
        if self.kept is not None:
            self.kept.adapters[service_type] = client.adapter
        return client

    def _negotiate(self, nova: ServiceClient) -> tuple[int, int] | None:
        """The microversion to send: min(nova's maximum, 2.69); None for a 2.0-only nova."""
        data = nova.adapter.get_endpoint_data()
        if data is None:
            raise ks_exceptions.EndpointNotFound("compute endpoint not found in the catalog")
        highest = _version_tuple(data.max_microversion)
        if highest is None:
            return None
        return min(highest, WANTED_MICROVERSION)

    def _probe(self, nova: ServiceClient, microversion: str | None) -> None:
        nova.get_json(nova.versioned("v2.1", "servers/detail"),
                      params={"all_tenants": 1, "limit": 1}, microversion=microversion)

    def observe(self) -> Observation:
        session = self._authenticate()
        nova = self._client(session, "compute")
        try:
            version = self._negotiate(nova)
            microversion = f"{version[0]}.{version[1]}" if version else None
            self._probe(nova, microversion)
        except LISTING_ERRORS as exc:
            self.budget.remaining()
            raise RunAborted(
                f'the clouds.yaml entry "{self.settings.os_cloud}" cannot observe the '
                f"whole cloud: {exc}"
            ) from None
        self._enumerate("instance", lambda: self._instances(nova, version, microversion))
        cinder = self._client(session, "block-storage")
        self._enumerate("volume", lambda: self._volumes(cinder))
        network = self._client(session, "network")
        self._enumerate("floating_ip", lambda: self._floating_ips(network))
        glance = self._client(session, "image")
        self._enumerate("image", lambda: self._images(glance))
        if self.settings.include_octavia:
            octavia = self._client(session, "load-balancer")
            self._enumerate("loadbalancer", lambda: self._loadbalancers(octavia))
        type_names = self._volume_types(cinder)
        self._rename_volume_types(type_names)
        return self.observation

    def _enumerate(self, resource_type: str, listing: Callable[[], bool]) -> None:
        """Run one type's listing; it returns False when it stays incomplete."""
        try:
            complete = listing()
        except LISTING_ERRORS as exc:
            self.budget.remaining()
            self.observation.errors.append(f"enumerating {resource_type}: {exc}")
            return
        if complete:
            self.observation.enumerated_types.add(resource_type)

    # --- nova ----------------------------------------------------------------------------

    def _flavors(self, nova: ServiceClient, microversion: str | None) -> dict[str, Any]:
        catalogue: dict[str, Any] = {}
        for flavor in paginate(nova, nova.versioned("v2.1", "flavors/detail"),
                               {"is_public": "None"}, "flavors", "flavors_links",
                               microversion=microversion):
            size = resources.flavor_size(flavor, "name")
            if size is not None:
                catalogue[str(flavor.get("id"))] = size
        return catalogue

    def _instances(self, nova: ServiceClient, version: tuple[int, int] | None,
                   microversion: str | None) -> bool:
        complete = True
        flavors: dict[str, Any] | None = None
        if version is None or version < EMBEDDED_FLAVOR:
            try:
                flavors = self._flavors(nova, microversion)
            except LISTING_ERRORS as exc:
                self.budget.remaining()
                self.observation.errors.append(f"enumerating instance: listing the flavors: {exc}")
                flavors, complete = {}, False
        path = nova.versioned("v2.1", "servers/detail")
        for server in paginate(nova, path, {"all_tenants": 1}, "servers", "servers_links",
                               microversion=microversion):
            if resources.is_down_cell_record(server):
                rid = server.get("id")
                if isinstance(rid, str) and rid:
                    self.observation.unknown.add(("instance", rid))
                continue
            self.observation.resources.append(resources.instance(server, flavors))
        if self.request.deleted_since is not None:
            try:
                self._deleted_servers(nova, path, microversion)
            except LISTING_ERRORS as exc:
                # Without nova's instants the absence pass must not date these deletes.
                self.budget.remaining()
                self.observation.errors.append(
                    f"enumerating instance: listing the deleted servers: {exc}"
                )
                complete = False
        return complete

    def _deleted_servers(self, nova: ServiceClient, path: str, microversion: str | None) -> None:
        assert self.request.deleted_since is not None
        params = {
            "all_tenants": 1,
            "deleted": "true",
            "changes-since": format_timestamp(self.request.deleted_since),
        }
        for server in paginate(nova, path, params, "servers", "servers_links",
                               microversion=microversion):
            if resources.is_down_cell_record(server):
                continue
            deletion = resources.deleted_instance(server)
            if deletion is not None:
                self.observation.deletions.append(deletion)

    # --- cinder ----------------------------------------------------------------------------

    def _volumes(self, cinder: ServiceClient) -> bool:
        for item in paginate(cinder, cinder.versioned("v3", "volumes/detail"),
                             {"all_tenants": 1}, "volumes", "volumes_links"):
            self.observation.resources.append(resources.volume(item, {}))
        return True

    def _volume_types(self, cinder: ServiceClient) -> dict[str, str]:
        try:
            body = cinder.get_json(cinder.versioned("v3", "types"), params={"is_public": "None"})
            entries = [
                SizeNameEntry("volume_type", str(item["id"]), str(item["name"]))
                for item in body["volume_types"]
            ]
        except LISTING_ERRORS as exc:
            self.budget.remaining()
            self.observation.errors.append(
                f"listing the size names of {self.cloud}: listing the volume types: {exc}"
            )
            return {}
        self.observation.size_names = entries
        return {entry.size_id: entry.name for entry in entries}

    def _rename_volume_types(self, type_names: Mapping[str, str]) -> None:
        # A cinder below 3.63 may report a type it did not load by its id.
        if not type_names:
            return
        renamed = []
        for observed in self.observation.resources:
            size = observed.size
            if observed.resource_type == "volume" and size and size.get("type") in type_names:
                size = {**size, "type": type_names[size["type"]]}
                observed = dataclasses.replace(observed, size=size)
            renamed.append(observed)
        self.observation.resources = renamed

    # --- neutron, glance, octavia ---------------------------------------------------------------

    def _floating_ips(self, network: ServiceClient) -> bool:
        for item in paginate(network, network.versioned("v2.0", "floatingips"), {},
                             "floatingips", "floatingips_links", stop_on_short_page=True):
            self.observation.resources.append(resources.floating_ip(item))
        return True

    def _images(self, glance: ServiceClient) -> bool:
        complete = True
        path = glance.versioned("v2", "images")
        base = {"visibility": "all", "member_status": "all"}
        unknown: collections.Counter[str] = collections.Counter()
        # os_hidden images are left out unless asked for, and asked for alone.
        for params in (base, {**base, "os_hidden": "true"}):
            for item in paginate(glance, path, params, "images", None):
                try:
                    observed = resources.image(item)
                except resources.UnreadableResource as exc:
                    self.observation.errors.append(f"enumerating image: {exc}")
                    complete = False
                    continue
                if observed is not None:
                    self.observation.resources.append(observed)
                if image_data(item.get("status")) is ImageData.UNKNOWN:
                    unknown[repr(item.get("status"))] += 1
        for status, count in sorted(unknown.items()):
            LOG.warning("cloud %s: %d images have glance status %s, which the notification "
                        "table does not know; deferred as in transition (neither booked "
                        "live nor deleted)", self.cloud, count, status)
        return complete

    def _loadbalancers(self, octavia: ServiceClient) -> bool:
        for item in paginate(octavia, octavia.versioned("v2", "lbaas/loadbalancers"), {},
                             "loadbalancers", "loadbalancers_links"):
            observed = resources.loadbalancer(item)
            if observed is not None:
                self.observation.resources.append(observed)
        return True
