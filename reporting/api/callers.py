"""Who calls the Reporting API: Tally's roles, the caller of a request and the error
of an auth configuration that cannot work.

Shared by the strategies (``reporting.api.auth`` for bearer tokens and noauth,
``reporting.api.keystone_auth`` for keystone), which both build a ``Caller``.
"""

from __future__ import annotations

import dataclasses

ROLES = ("ingest", "read", "admin", "project_reader", "account_reader")
# Reads the project-scoped queries of the one project its credentials name.
PROJECT_READER = "project_reader"
# Reads one billing account (its statements, credits and charges, commitments) and
# the project-scoped queries of every project that account holds now.
ACCOUNT_READER = "account_reader"


class AuthConfigError(ValueError):
    """The auth configuration cannot work; the service refuses to start."""


@dataclasses.dataclass(frozen=True)
class Caller:
    """Who sent the request: a Tally role ("" when none maps) and, for a project
    reader (a keystone token scoped to a project, a project_reader bearer token), that
    project; an account reader names its account (a bearer token) or the project its
    keystone token is scoped to (the account holding that project now, found per
    request); ``note`` says why a keystone token's scope granted less than its roles
    (added to a 403's message)."""

    role: str
    project_id: str | None = None
    note: str | None = None
    account_id: str | None = None
