"""The OpenStack adapter: one run's observation of one cloud.

Order of a run: resolve the clouds.yaml entry, authenticate, negotiate nova's
microversion, probe that the account sees every project (one server across all
tenants), then the listings of the services the entry names (instances with the
deleted servers, volumes, floating IPs, images, load balancers: ``services``), then
cinder's volume types.
A failure a single type can carry costs that type its completeness; anything else
aborts the run before a type is observed (``RunAborted``).

The instance type is complete only from microversion 2.69, negotiated from a
version document nova answered: below it nova leaves the servers of an unreachable
cell out of its listing, so an absent server proves nothing (its deletes then come
from nova's deleted listing alone); a document that could not be read says nothing
about the microversion and is an error of the instance type.
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
from reporting.openstack import keystone_projects, resources
from reporting.openstack.credentials import resolve_cloud
from reporting.openstack.errors import ServiceNotInCatalog
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
from tally_common.digits import ascii_digits

LOG = logging.getLogger(__name__)

PLATFORM = "openstack"
# 2.47 embeds each server's flavor; 2.69 answers servers of a down cell with a
# minimal UNKNOWN record instead of leaving them out.  Pinned, never "latest":
# from 2.75 nova refuses unknown query parameters.
WANTED_MICROVERSION = (2, 69)
EMBEDDED_FLAVOR = (2, 47)
DOWN_CELLS_LISTED = (2, 69)
# cinder filters volumes by created_at/updated_at with comparison operators from 3.60.
CINDER_TIME_FILTERS = (3, 60)

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


class VersionDocumentUnreadable(ks_exceptions.ClientException):
    """Nova's version document could not be read: its microversions are unknown."""


@dataclasses.dataclass(frozen=True)
class NovaVersion:
    """What the run knows of nova's microversions.

    ``highest`` is nova's maximum (None for a nova whose document names none: 2.0,
    or a 2.1 without microversions); ``unreadable`` says why the document could not
    be read, in which case nothing is known and the run asks for no microversion."""

    highest: tuple[int, int] | None
    unreadable: str | None = None

    @property
    def chosen(self) -> tuple[int, int] | None:
        return None if self.highest is None else min(self.highest, WANTED_MICROVERSION)

    @property
    def header(self) -> str | None:
        chosen = self.chosen
        return None if chosen is None else f"{chosen[0]}.{chosen[1]}"

    @property
    def lists_down_cells(self) -> bool:
        chosen = self.chosen
        return self.unreadable is None and chosen is not None and chosen >= DOWN_CELLS_LISTED


def document_maximum(body: Any) -> tuple[int, int] | None:
    """Nova's maximum microversion from its version document (``{"version": {...}}``,
    or the ``{"versions": [...]}`` of an unversioned endpoint); None when it names
    none (``"version": ""``: a 2.0 endpoint).  VersionDocumentUnreadable for a body
    that is no version document."""
    entries: list[Any]
    if isinstance(body, dict) and isinstance(body.get("version"), dict):
        entries = [body["version"]]
    elif isinstance(body, dict) and isinstance(body.get("versions"), list):
        entries = body["versions"]
    else:
        raise VersionDocumentUnreadable("the answer is no version document")
    highest: tuple[int, int] | None = None
    for entry in entries:
        text = entry.get("version") if isinstance(entry, dict) else None
        if not text:
            continue
        parts = str(text).split(".")
        if len(parts) != 2 or not all(ascii_digits(p) for p in parts):
            raise VersionDocumentUnreadable(f"the document names version {text!r}")
        found = (int(parts[0]), int(parts[1]))
        highest = found if highest is None else max(highest, found)
    return highest


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

    def _negotiate(self, nova: ServiceClient) -> NovaVersion:
        """Nova's microversions from its version document.

        keystoneauth answers no maximum both for a nova whose document names none and
        for a document it could not read (a 401 of an access rule, a 503, a proxy),
        and then quietly uses the catalog URL; so without a maximum the document is
        read again here (``GET <endpoint>/``, which an access rule ``/**/`` covers)
        and an unreadable one is said to be so, never taken for "nova speaks 2.1"."""
        data = nova.endpoint_data()
        highest = _version_tuple(data.max_microversion)
        if highest is not None:
            return NovaVersion(highest)
        try:
            return NovaVersion(document_maximum(nova.get_json("/")))
        except ServiceNotInCatalog:
            raise
        except LISTING_ERRORS as exc:
            self.budget.remaining()
            endpoint = nova.adapter.get_endpoint() or "the compute endpoint"
            return NovaVersion(None, f"nova's version document ({endpoint.rstrip('/')}/) "
                                     f"could not be read, so its microversion is unknown: {exc}")

    def _probe(self, nova: ServiceClient, microversion: str | None) -> None:
        nova.get_json(nova.versioned("v2.1", "servers/detail"),
                      params={"all_tenants": 1, "limit": 1}, microversion=microversion)

    def observe(self) -> Observation:
        session = self._authenticate()
        nova = self._client(session, "compute")
        entry = self.settings.os_cloud
        try:
            version = self._negotiate(nova)
            self._probe(nova, version.header)
        except ServiceNotInCatalog as exc:
            self.budget.remaining()
            raise RunAborted(f'the clouds.yaml entry "{entry}": {exc}') from None
        except LISTING_ERRORS as exc:
            self.budget.remaining()
            raise RunAborted(
                f'the clouds.yaml entry "{entry}" cannot observe the whole cloud: {exc}'
            ) from None
        self._enumerate("instance", lambda: self._instances(nova, version))
        # A service the entry does not name is not run by the cloud: its type is not
        # observed, so never reconciled (adapter_config services).
        runs = self.settings.services
        cinder = self._client(session, "block-storage") if "block-storage" in runs else None
        if cinder is not None:
            self._enumerate("volume", lambda: self._volumes(cinder))
        if "network" in runs:
            network = self._client(session, "network")
            self._enumerate("floating_ip", lambda: self._floating_ips(network))
        if "image" in runs:
            glance = self._client(session, "image")
            self._enumerate("image", lambda: self._images(glance))
        if "load-balancer" in runs:
            octavia = self._client(session, "load-balancer")
            self._enumerate("loadbalancer", lambda: self._loadbalancers(octavia))
        if cinder is not None:
            self._rename_volume_types(self._volume_types(cinder))
        if self.settings.accounts_by_domain is not None:
            self._default_accounts(session)
        return self.observation

    def _default_accounts(self, session: Any) -> None:
        """Each keystone project's default account, named after its domain; a listing
        keystone refuses is said (``default_account_errors``), never a failed run."""
        settings = self.settings
        try:
            identity = self._client(session, "identity")
            domains, problems = keystone_projects.project_domains(identity)
        except LISTING_ERRORS as exc:
            self.budget.remaining()
            hint = (f"; {keystone_projects.NEEDS}"
                    if getattr(exc, "http_status", None) in (401, 403) else "")
            self.observation.default_account_errors.append(
                f"listing keystone's projects: {exc}{hint}")
            return
        self.observation.default_account_errors.extend(problems)
        self.observation.default_accounts = {
            project: (settings.domain_account(self.cloud, domain),
                      f"keystone domain {domain} of cloud {self.cloud}")
            for project, domain in domains.items()}

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

    def _instances(self, nova: ServiceClient, version: NovaVersion) -> bool:
        """List the servers (and the deleted ones); True when an absent server proves
        its deletion: the listing ran to its end at 2.69 or above."""
        microversion = version.header
        complete = version.lists_down_cells
        if version.unreadable is not None:
            self.observation.errors.append(f"enumerating instance: {version.unreadable}")
        elif not complete:
            LOG.warning("cloud %s: nova answers microversion %s at most, below 2.69: servers "
                        "of an unreachable cell are left out of its listing, so no instance "
                        "is deleted for being absent (deletes come from nova's deleted "
                        "listing alone)", self.cloud, microversion or "2.1 (none)")
        flavors: dict[str, Any] | None = None
        chosen = version.chosen
        if chosen is None or chosen < EMBEDDED_FLAVOR:
            try:
                flavors = self._flavors(nova, microversion)
            except LISTING_ERRORS as exc:
                self.budget.remaining()
                self.observation.errors.append(f"enumerating instance: listing the flavors: {exc}")
                flavors, complete = {}, False
        path = nova.versioned("v2.1", "servers/detail")
        since = self.request.changed_since
        params: dict[str, Any] = {"all_tenants": 1}
        if since is not None:
            # Servers changed since, deleted ones included (nova lists them with
            # changes-since); the deleted listing below reports those.
            params["changes-since"] = format_timestamp(since)
            self.observation.changed_types.add("instance")
            complete = False
        for server in paginate(nova, path, params, "servers", "servers_links",
                               microversion=microversion):
            if since is not None and resources.is_deleted_server(server):
                continue
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
        path = cinder.versioned("v3", "volumes/detail")
        since = self.request.changed_since
        if since is not None and self._cinder_filters_by_time(cinder):
            # cinder leaves updated_at null until a volume first changes, and ANDs
            # filters: the created and the updated ones are asked for apart.
            listed: set[str] = set()
            for field in ("created_at", "updated_at"):
                params = {"all_tenants": 1, field: f"gte:{_whole_seconds(since)}"}
                for item in paginate(cinder, path, params, "volumes", "volumes_links",
                                     microversion="3.60"):
                    if str(item.get("id")) not in listed:
                        listed.add(str(item.get("id")))
                        self.observation.resources.append(resources.volume(item, {}))
            self.observation.changed_types.add("volume")
            return False
        for item in paginate(cinder, path, {"all_tenants": 1}, "volumes", "volumes_links"):
            self.observation.resources.append(resources.volume(item, {}))
        return True

    def _cinder_filters_by_time(self, cinder: ServiceClient) -> bool:
        """Whether cinder answers 3.60 (else an incremental run lists volumes whole)."""
        try:
            highest = _version_tuple(cinder.endpoint_data().max_microversion)
        except ServiceNotInCatalog:
            raise
        except LISTING_ERRORS as exc:
            LOG.warning("cloud %s: cinder's microversions could not be read (%s): volumes "
                        "are listed whole", self.cloud, exc)
            return False
        return highest is not None and highest >= CINDER_TIME_FILTERS

    def _volume_types(self, cinder: ServiceClient) -> dict[str, str]:
        try:
            # cinder caps this listing at osapi_max_limit too, linking the capped page.
            entries = [
                SizeNameEntry("volume_type", str(item["id"]), str(item["name"]))
                for item in paginate(cinder, cinder.versioned("v3", "types"),
                                     {"is_public": "None"}, "volume_types",
                                     "volume_type_links")
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
        since = self.request.changed_since
        params = {} if since is None else {"changed_since": _whole_seconds(since)}
        for item in paginate(network, network.versioned("v2.0", "floatingips"), params,
                             "floatingips", "floatingips_links"):
            self.observation.resources.append(resources.floating_ip(item))
        if since is not None:
            self.observation.changed_types.add("floating_ip")
            return False
        return True

    def _images(self, glance: ServiceClient) -> bool:
        complete = True
        path = glance.versioned("v2", "images")
        base = {"visibility": "all", "member_status": "all"}
        since = self.request.changed_since
        if since is not None:
            base["updated_at"] = f"gte:{_whole_seconds(since)}"
            self.observation.changed_types.add("image")
            complete = False
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


def _whole_seconds(instant: Any) -> str:
    """An instant as the services' time filters read it, floored to the second (an
    earlier bound only lists more)."""
    return str(instant.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ"))
