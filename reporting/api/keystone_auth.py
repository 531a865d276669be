"""``auth_strategy=keystone``: keystonemiddleware's auth_token in front of the app.

The middleware validates the ``X-Auth-Token`` with keystone and, in
``delay_auth_decision`` mode, passes every request on with
``X-Identity-Status: Confirmed`` (and ``X-Roles``, ``X-Project-Id``) or ``Invalid``;
the views then decide (``reporting.api.auth.check_role``,
``reporting.api.project_scope``), so ``/healthz``, ``/readyz``, ``/metrics`` and the
OpenAPI document stay reachable without a token.

The middleware reads its options from ``[keystone_authtoken]`` of the service's
own ConfigOpts (passed as ``oslo_config_config``), never from the global CONF.
Keystone roles become Tally roles through ``[api] keystone_role_map``, within what
the token's scope allows (:func:`scoped_role`, docs/reporting-queries.md "Keystone
scopes"): the cloud-wide roles (``admin``, ``read``, ``ingest``) need a
system-scoped token, or one scoped to a project of ``[api]
keystone_admin_project_ids``; a token scoped to any other project reads that project
at most; a domain-scoped token gets nothing.  The roles and the scope are read from
the token data the middleware validated (``keystone.token_auth``), never from
``X-Roles``, which joins the role names with commas a role name may hold.

When keystone cannot be reached the middleware either marks the token invalid (in
delay mode: the views would answer 401) or lets keystoneauth's exception through (a
stalled keystone's ``ConnectTimeout``, an ``SSLError``: a 500). Tally answers 503
instead, with a JSON error, for every call the middleware makes to keystone (the
user's token, a service token, the service user's own login and discovery), also
when keystone refuses to let the service user validate tokens; and bounds the wait:
``[keystone_authtoken] http_connect_timeout`` (each connection and each wait for an
answer) defaults to ``KEYSTONE_TIMEOUT_S`` here (keystonemiddleware's own default
waits forever) and ``http_request_max_retries`` to 1.  The caller is told the kind of
failure only; keystone's address and the full reason go to the operator's log.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Mapping
from typing import Any

from flask import Flask
from oslo_config import cfg

from reporting.api.callers import (
    ACCOUNT_READER,
    PROJECT_READER,
    ROLES,
    AuthConfigError,
    Caller,
)

LOG = logging.getLogger(__name__)

# Meaning of the empty role: authenticated by keystone, but none of its roles maps
# to a Tally role, so every protected view answers 403 (not 401).
NO_ROLE = ""

KEYSTONE_TIMEOUT_S = 5
KEYSTONE_RETRIES = 1

api_keystone_opts: list[cfg.Opt] = [
    cfg.DictOpt(
        "keystone_role_map",
        default={"admin": "admin", "reader": PROJECT_READER, "member": PROJECT_READER},
        help="With auth_strategy=keystone: keystone role name -> Tally role "
        "(ingest, read, admin, account_reader or project_reader), e.g. admin:admin,"
        "reader:project_reader,member:project_reader,tally_auditor:read,tally_ingest:ingest,"
        "tally_account_reader:account_reader. read and admin see every project; "
        "project_reader only the project the token is scoped to; account_reader the "
        "billing account holding that project now and every project of that account. "
        "A token with several mapped roles gets the strongest (admin, then ingest, then "
        "read, then account_reader, then project_reader); a token with none gets 403. "
        "What a role grants "
        "depends on the token's scope: admin, read and ingest need a system-scoped "
        "token (or one scoped to a keystone_admin_project_ids project); scoped to any "
        "other project a token reads that project at most; a domain-scoped token gets "
        "nothing. Role names are compared case-insensitively, as oslo.policy does.",
    ),
    cfg.ListOpt(
        "keystone_admin_project_ids",
        default=[],
        help="With auth_strategy=keystone: ids of projects whose project-scoped tokens "
        "count as cloud-wide, like a system-scoped token (the admin project of a "
        "deployment whose operators do not use system scope). Keep it to projects only "
        "the operators hold roles on. Empty: only system-scoped tokens are cloud-wide.",
    ),
]

# Strongest first: a token that maps to several Tally roles gets the first.
# An account reader reads its account and every project it holds: more than one
# project, less than the cloud.
_PRECEDENCE = ("admin", "ingest", "read", ACCOUNT_READER, PROJECT_READER)

ROLE_MAP_KEY = "TALLY_KEYSTONE_ROLE_MAP"
ADMIN_PROJECTS_KEY = "TALLY_KEYSTONE_ADMIN_PROJECTS"
# What keystonemiddleware leaves in the environ: the validated token's data.
TOKEN_AUTH_KEY = "keystone.token_auth"
# The Tally roles that reach beyond one project.
CLOUD_WIDE = frozenset({"admin", "read", "ingest"})
AUTHTOKEN_GROUP = "keystone_authtoken"


def role_map_from_conf(conf: cfg.ConfigOpts) -> dict[str, str]:
    """The role map, keystone role names lower-cased; unknown Tally roles refused."""
    mapping: dict[str, str] = {}
    for keystone_role, tally_role in conf.api.keystone_role_map.items():
        if tally_role not in ROLES:
            raise AuthConfigError(
                f"[api] keystone_role_map: {keystone_role}:{tally_role}: "
                f"{tally_role!r} is not one of {', '.join(ROLES)}"
            )
        mapping[keystone_role.strip().lower()] = tally_role
    return mapping


def _bound_keystone_waits(conf: cfg.ConfigOpts) -> None:
    """Default timeouts for the middleware's calls to keystone (a value set in the
    configuration file still wins)."""
    from keystonemiddleware import auth_token

    for group, opts in auth_token.list_opts():
        conf.register_opts(opts, group=group)
    conf.set_default("http_connect_timeout", KEYSTONE_TIMEOUT_S, group=AUTHTOKEN_GROUP)
    conf.set_default("http_request_max_retries", KEYSTONE_RETRIES, group=AUTHTOKEN_GROUP)


def _unavailable_body(kind: str, timed_out: bool) -> bytes:
    """The caller's answer: the kind of failure, never keystone's address."""
    late = ": keystone did not answer in time" if timed_out else ""
    return json.dumps({"error": {
        "code": "keystone_unavailable",
        "message": f"cannot validate the token: keystone is unavailable or refuses "
                   f"the service user ({kind}{late}; the operator's log has the detail)",
    }}).encode()


def _caused_by(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``exc`` or an exception it was raised from or while handling is a ``kind``
    (a DiscoveryFailure raised while handling a ConnectTimeout, say)."""
    seen: BaseException | None = exc
    for _ in range(10):  # a chain is short; never loop on a pathological one
        if seen is None:
            return False
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _middleware_class() -> type:
    """auth_token's AuthProtocol answering 503 (JSON) when keystone is unreachable."""
    import webob
    from keystoneauth1 import exceptions as ksa_exceptions
    from keystonemiddleware import auth_token

    # keystoneauth's ConnectionError covers ConnectFailure (refused), ConnectTimeout
    # (no connection or no answer within the timeout), SSLError and
    # UnknownConnectionError; the middleware itself handles only ConnectFailure.
    unreachable = (ksa_exceptions.ConnectionError, ksa_exceptions.DiscoveryFailure,
                   ksa_exceptions.RequestTimeout, auth_token.ServiceError)

    class KeystoneUnavailable(Exception):
        def __init__(self, cause: BaseException, reason: str) -> None:
            super().__init__(reason)
            self.kind = type(cause).__name__
            self.timed_out = _caused_by(cause, ksa_exceptions.ConnectTimeout)

    class AuthProtocol(auth_token.AuthProtocol):
        def _reason(self, cause: BaseException) -> str:
            reason = f"{type(cause).__name__}: {cause}"
            if _caused_by(cause, ksa_exceptions.ConnectTimeout):
                timeout = self._conf.get("http_connect_timeout")
                reason += f"; no answer within [{AUTHTOKEN_GROUP}] " \
                          f"http_connect_timeout = {timeout} s"
            return reason

        def fetch_token(self, token: str, **kwargs: Any) -> Any:
            try:
                return super().fetch_token(token, **kwargs)
            except auth_token.InvalidToken as exc:
                # In delay mode the middleware turns "keystone unreachable" into
                # InvalidToken, raised while handling the original failure.
                cause = exc.__context__
                if isinstance(cause, unreachable):
                    raise KeystoneUnavailable(cause, self._reason(cause)) from exc
                raise
            except unreachable as exc:
                # What the middleware lets through (a stalled keystone's timeout).
                self.log.critical("Unable to validate token: %s", exc)
                raise KeystoneUnavailable(exc, self._reason(exc)) from exc

        def process_request(self, request: Any) -> Any:
            try:
                return super().process_request(request)
            except KeystoneUnavailable as exc:
                # keystone's URL is in the reason: for the operator, not the caller.
                LOG.error("cannot validate a token: keystone is unavailable or refuses "
                          "the service user: %s", exc)
                return webob.Response(body=_unavailable_body(exc.kind, exc.timed_out),
                                      status=503,
                                      content_type="application/json", charset=None)

    return AuthProtocol


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    """Put auth_token in front of ``app.wsgi_app``, configured from ``conf``."""
    app.config[ROLE_MAP_KEY] = role_map_from_conf(conf)
    app.config[ADMIN_PROJECTS_KEY] = frozenset(
        project.strip() for project in conf.api.keystone_admin_project_ids if project.strip())
    _bound_keystone_waits(conf)
    middleware_conf: dict[str, Any] = {
        "oslo_config_config": conf,
        # Unauthenticated requests go on to the views, which answer 401 where a
        # role is needed and serve the open endpoints.
        "delay_auth_decision": True,
    }
    app.wsgi_app = _middleware_class()(app.wsgi_app, middleware_conf)  # type: ignore[method-assign]
    LOG.info("auth_strategy=keystone: tokens validated by keystonemiddleware auth_token")


def tally_role(keystone_roles: Iterable[str], role_map: Mapping[str, str]) -> str:
    """The strongest Tally role granted by ``keystone_roles``, NO_ROLE if none.

    Each name is one role, compared case-insensitively (as oslo.policy's ``role:``
    check does) and never split or trimmed: a role named ``member,admin`` is neither
    ``member`` nor ``admin``."""
    granted = granted_roles(keystone_roles, role_map)
    for role in _PRECEDENCE:
        if role in granted:
            return role
    return NO_ROLE


def granted_roles(keystone_roles: Iterable[str], role_map: Mapping[str, str]) -> set[str]:
    """Every Tally role ``keystone_roles`` map to (see :func:`tally_role`)."""
    return {role_map[name.lower()] for name in keystone_roles if name.lower() in role_map}


@dataclasses.dataclass(frozen=True)
class TokenScope:
    """What a keystone token is scoped to: ``kind`` is ``system``, ``admin_project``
    (a project of ``[api] keystone_admin_project_ids``), ``project``, ``domain`` or
    ``unscoped``; ``project_id`` for the two project kinds."""

    kind: str
    project_id: str | None = None


def token_scope(auth_ref: Any, admin_projects: frozenset[str]) -> TokenScope:
    """The scope of a validated token (keystoneauth's AccessInfo)."""
    if auth_ref.system_scoped:  # {"system": {"all": true}}
        return TokenScope("system")
    if auth_ref.project_scoped:
        project = str(auth_ref.project_id)
        return TokenScope("admin_project" if project in admin_projects else "project", project)
    if auth_ref.domain_scoped:
        return TokenScope("domain")
    return TokenScope("unscoped")


def scoped_role(mapped: str, scope: TokenScope) -> tuple[str, str | None]:
    """The Tally role a token holds: ``mapped`` (its roles through the role map) within
    what ``scope`` allows, and a note for a 403 when the scope took something away.

    - system: ``mapped``; a system-scoped project_reader has no project to read and
      reads every project (``read``), keystone's system reader;
      an account_reader has no project to find its account by: nothing;
    - admin project: ``mapped``; project_reader reads that project;
    - project: project_reader of that project at most (admin and read are cut down to
      it; ingest, a cloud-wide write, to nothing);
    - domain, unscoped: nothing (Tally cannot tell which projects a domain holds).
    """
    cloud_wide = "needs a system-scoped token (or one scoped to a project of [api] " \
                 "keystone_admin_project_ids)"
    if mapped == NO_ROLE:
        return NO_ROLE, None
    if scope.kind == "system":
        if mapped == ACCOUNT_READER:
            return NO_ROLE, ("account_reader reads the account holding the project its "
                             "token is scoped to: a system-scoped token names no project")
        return ("read" if mapped == PROJECT_READER else mapped), None
    if scope.kind == "admin_project":
        return mapped, None
    if scope.kind == "project":
        if mapped in ("admin", "read"):
            return PROJECT_READER, (f"the token's role maps to {mapped}, which {cloud_wide}; "
                                    f"scoped to project {scope.project_id} it reads that "
                                    "project only")
        if mapped == "ingest":
            return NO_ROLE, f"the token's role maps to ingest, which {cloud_wide}"
        return mapped, None
    return NO_ROLE, _unscoped_note(scope)


def _unscoped_note(scope: TokenScope) -> str:
    """Why a domain-scoped or unscoped token gets nothing (an unscoped one holds no
    roles at all: keystone grants roles on a scope only)."""
    what = ("a domain-scoped token" if scope.kind == "domain"
            else "an unscoped token (no project, domain or system scope, so no roles)")
    return (f"{what} grants nothing in Tally: use a token scoped to your project "
            f"(its data), or a system-scoped one (cloud-wide roles)")


def strongest_in_scope(granted: set[str], scope: TokenScope) -> tuple[str, str | None]:
    """The strongest of what each granted role leaves in ``scope`` (a project-scoped
    ``ingest`` and ``member`` still read the project), with the note of the strongest
    granted role when its scope cut it down."""
    results = [scoped_role(role, scope) for role in _PRECEDENCE if role in granted]
    kept = {role for role, _note in results}
    best = next((role for role in _PRECEDENCE if role in kept), NO_ROLE)
    if not results and scope.kind in ("domain", "unscoped"):
        # No mapped role at all (an unscoped token never has one): the scope is
        # still the reason to give, not "needs the read role" alone.
        return best, _unscoped_note(scope)
    return best, (results[0][1] if results else None)


def caller_from_environ(environ: Mapping[str, Any]) -> Caller | None:
    """None without a user token keystone confirmed (or with a service token it did
    not); else the role its roles map to within its scope (maybe NO_ROLE) and the
    project a project reader reads.

    auth_token strips any client-sent identity headers before it sets its own, and
    the token data comes from keystone, so neither can be forged by the caller.
    """
    from flask import current_app

    if environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
        return None
    # Set by the middleware only when the request carried a service token.
    if environ.get("HTTP_X_SERVICE_IDENTITY_STATUS", "Confirmed") != "Confirmed":
        return None
    token_auth = environ.get(TOKEN_AUTH_KEY)
    auth_ref = getattr(token_auth, "user", None)
    if auth_ref is None:  # Confirmed is only ever set with the token's data
        return None
    granted = granted_roles(auth_ref.role_names or [], current_app.config[ROLE_MAP_KEY])
    scope = token_scope(auth_ref, current_app.config[ADMIN_PROJECTS_KEY])
    role, note = strongest_in_scope(granted, scope)
    # An account reader's account is the one holding this project now (per request).
    project = scope.project_id if role in (PROJECT_READER, ACCOUNT_READER) else None
    return Caller(role, project, note)
