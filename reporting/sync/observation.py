"""What an adapter reports about one cloud, and the interface an adapter implements.

The adapter reports evidence; the framework (``reporting.sync.plan``) applies the
rules.  Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Mapping
from typing import Any, Protocol


@dataclasses.dataclass(frozen=True)
class ObservedResource:
    """One live resource as the platform lists it.

    ``size`` is None when the platform did not describe it (e.g. a flavor listing
    that failed): the size is then neither booked nor compared.  ``last_changed`` is
    None when the platform gives no instant, and such a resource is never deferred
    as recent.
    """

    resource_type: str
    resource_id: str
    project_id: str
    state: str | None
    size: Mapping[str, Any] | None
    in_transition: bool
    last_changed: dt.datetime | None  # naive UTC
    created_at: dt.datetime | None  # naive UTC


@dataclasses.dataclass(frozen=True)
class ReportedDeletion:
    """A resource the platform says it destroyed, at the instant it says it did."""

    resource_type: str
    resource_id: str
    project_id: str
    deleted_at: dt.datetime  # naive UTC


@dataclasses.dataclass(frozen=True)
class SizeNameEntry:
    """A platform id ingest replaces by its name (``size_names``), e.g. a volume type."""

    kind: str
    size_id: str
    name: str


@dataclasses.dataclass
class Observation:
    """Everything one run learned about one cloud.

    ``enumerated_types`` is the positive set: a type is in it only when its listing
    (and everything the type's completeness depends on) ran to its end.  Only those
    types take part in the absence pass.  ``unknown`` names resources the platform
    says exist but cannot describe (nova servers in a down cell): they are never
    read as absent and never corrected.  ``errors`` are per-type or per-listing
    reasons; any of them fails the run.  ``size_names`` is None when the adapter
    could not read them (the stored names then stay as they are).
    """

    resources: list[ObservedResource] = dataclasses.field(default_factory=list)
    deletions: list[ReportedDeletion] = dataclasses.field(default_factory=list)
    enumerated_types: set[str] = dataclasses.field(default_factory=set)
    unknown: set[tuple[str, str]] = dataclasses.field(default_factory=set)
    errors: list[str] = dataclasses.field(default_factory=list)
    size_names: list[SizeNameEntry] | None = None
    # Types an incremental run listed by change (only what changed since
    # ``ObserveRequest.changed_since``): never enumerated, so nothing of theirs is read
    # as absent.
    changed_types: set[str] = dataclasses.field(default_factory=set)
    # Where the platform groups projects (keystone domains, adapter_config
    # accounts_by_domain): each listed project's default billing account, as
    # project id -> (account id, the account's description); None when not asked.
    # ``default_account_errors`` say why some or all are missing: they never fail the
    # run (the resources' history does not depend on them).
    default_accounts: dict[str, tuple[str, str]] | None = None
    default_account_errors: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class ObserveRequest:
    """What the framework asks of an adapter for one run.

    ``at`` is the run's one clock (told or wall).  ``deleted_since`` is the lower
    bound of the deletion listing, None on a cloud's first run (no listing then).
    ``deadline`` is a ``time.monotonic()`` value the adapter must not run past.
    ``changed_since`` asks for an incremental run: list only what changed from that
    instant on where the platform can filter so (those types go in
    ``Observation.changed_types``), every resource of the other types; None: a full run.
    """

    cloud: str
    at: dt.datetime  # naive UTC
    deleted_since: dt.datetime | None
    deadline: float
    changed_since: dt.datetime | None = None


class RunAborted(Exception):
    """A failure that says nothing about any single resource type.

    Ends the run before anything is observed: an adapter_config that does not
    parse, credentials that cannot be resolved or are refused, an account that
    cannot see the whole cloud, a run past its budget.  The message is recorded in
    ``sync_runs.stats.errors`` and never sent to the API's caller.
    """


class Adapter(Protocol):
    """A platform adapter, built per run from the cloud's ``adapter_config``."""

    platform: str

    def observe(self, request: ObserveRequest) -> Observation:
        """List the cloud; raise RunAborted for a failure no type can carry alone."""
        ...
