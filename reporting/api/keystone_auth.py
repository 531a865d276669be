"""``auth_strategy=keystone``: keystonemiddleware's auth_token in front of the app.

The middleware validates the ``X-Auth-Token`` with keystone and, in
``delay_auth_decision`` mode, passes every request on with
``X-Identity-Status: Confirmed`` (and ``X-Roles``, ``X-Project-Id``) or ``Invalid``;
the views then decide (``reporting.api.auth.check_role``,
``reporting.api.project_scope``), so ``/healthz``, ``/readyz``, ``/metrics`` and the
OpenAPI document stay reachable without a token.

The middleware reads its options from ``[keystone_authtoken]`` of the service's
own ConfigOpts (passed as ``oslo_config_config``), never from the global CONF.
Keystone roles become Tally roles through ``[api] keystone_role_map``; a token
mapped to ``project_reader`` reads only the project it is scoped to.

When keystone cannot be reached the middleware either marks the token invalid (in
delay mode: the views would answer 401) or lets keystoneauth's exception through (a
stalled keystone's ``ConnectTimeout``, an ``SSLError``: a 500). Tally answers 503
instead, with a JSON error, for every call the middleware makes to keystone (the
user's token, a service token, the service user's own login and discovery), also
when keystone refuses to let the service user validate tokens; and bounds the wait:
``[keystone_authtoken] http_connect_timeout`` (each connection and each wait for an
answer) defaults to ``KEYSTONE_TIMEOUT_S`` here (keystonemiddleware's own default
waits forever) and ``http_request_max_retries`` to 1.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask
from oslo_config import cfg

from reporting.api.auth import PROJECT_READER, ROLES, AuthConfigError, Caller

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
        "(ingest, read, admin or project_reader), e.g. admin:admin,reader:project_reader,"
        "member:project_reader,tally_auditor:read,tally_ingest:ingest. read and admin "
        "see every project; project_reader only the project the token is scoped to. "
        "A token with several mapped roles gets the strongest (admin, then ingest, then "
        "read, then project_reader); a token with none gets 403.",
    ),
]

# Strongest first: a token that maps to several Tally roles gets the first.
_PRECEDENCE = ("admin", "ingest", "read", PROJECT_READER)

ROLE_MAP_KEY = "TALLY_KEYSTONE_ROLE_MAP"
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


def _unavailable_body(reason: str) -> bytes:
    return json.dumps({"error": {
        "code": "keystone_unavailable",
        "message": f"cannot validate the token: keystone is unavailable or refuses "
                   f"the service user ({reason})",
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
        pass

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
                    raise KeystoneUnavailable(self._reason(cause)) from exc
                raise
            except unreachable as exc:
                # What the middleware lets through (a stalled keystone's timeout).
                self.log.critical("Unable to validate token: %s", exc)
                raise KeystoneUnavailable(self._reason(exc)) from exc

        def process_request(self, request: Any) -> Any:
            try:
                return super().process_request(request)
            except KeystoneUnavailable as exc:
                return webob.Response(body=_unavailable_body(str(exc)), status=503,
                                      content_type="application/json", charset=None)

    return AuthProtocol


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    """Put auth_token in front of ``app.wsgi_app``, configured from ``conf``."""
    app.config[ROLE_MAP_KEY] = role_map_from_conf(conf)
    _bound_keystone_waits(conf)
    middleware_conf: dict[str, Any] = {
        "oslo_config_config": conf,
        # Unauthenticated requests go on to the views, which answer 401 where a
        # role is needed and serve the open endpoints.
        "delay_auth_decision": True,
    }
    app.wsgi_app = _middleware_class()(app.wsgi_app, middleware_conf)  # type: ignore[method-assign]
    LOG.info("auth_strategy=keystone: tokens validated by keystonemiddleware auth_token")


def tally_role(keystone_roles: list[str], role_map: Mapping[str, str]) -> str:
    """The strongest Tally role granted by ``keystone_roles``, NO_ROLE if none."""
    names = (name.strip().lower() for name in keystone_roles)
    granted = {role_map[name] for name in names if name in role_map}
    for role in _PRECEDENCE:
        if role in granted:
            return role
    return NO_ROLE


def caller_from_environ(environ: Mapping[str, Any]) -> Caller | None:
    """None without a token keystone confirmed; else the mapped role (maybe NO_ROLE)
    and the project the token is scoped to (None for a domain or system scope).

    auth_token strips any client-sent identity headers before it sets its own, so
    these cannot be forged by the caller.
    """
    from flask import current_app

    if environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
        return None
    roles = [name for name in str(environ.get("HTTP_X_ROLES", "")).split(",") if name.strip()]
    # auth_token sets the header to None (not absent) for a domain or system scope.
    project_id = environ.get("HTTP_X_PROJECT_ID")
    project = project_id.strip() or None if isinstance(project_id, str) else None
    return Caller(tally_role(roles, current_app.config[ROLE_MAP_KEY]), project)
