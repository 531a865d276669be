"""``auth_strategy=keystone``: keystonemiddleware's auth_token in front of the app.

The middleware validates the ``X-Auth-Token`` with keystone and, in
``delay_auth_decision`` mode, passes every request on with
``X-Identity-Status: Confirmed`` (and ``X-Roles``) or ``Invalid``; the views then
decide (``reporting.api.auth.check_role``), so ``/healthz``, ``/readyz``,
``/metrics`` and the OpenAPI document stay reachable without a token.

The middleware reads its options from ``[keystone_authtoken]`` of the service's
own ConfigOpts (passed as ``oslo_config_config``), never from the global CONF.
Keystone roles become Tally roles through ``[api] keystone_role_map``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from flask import Flask
from oslo_config import cfg

from reporting.api.auth import ROLES, AuthConfigError

LOG = logging.getLogger(__name__)

# Meaning of the empty role: authenticated by keystone, but none of its roles maps
# to a Tally role, so every protected view answers 403 (not 401).
NO_ROLE = ""

api_keystone_opts: list[cfg.Opt] = [
    cfg.DictOpt(
        "keystone_role_map",
        default={"admin": "admin", "reader": "read", "member": "read"},
        help="With auth_strategy=keystone: keystone role name -> Tally role "
        "(ingest, read or admin), e.g. admin:admin,reader:read,member:read,"
        "tally_ingest:ingest. A token with several mapped roles gets the strongest "
        "(admin, then ingest, then read); a token with none gets 403.",
    ),
]

# Strongest first: a token that maps to several Tally roles gets the first.
_PRECEDENCE = ("admin", "ingest", "read")

ROLE_MAP_KEY = "TALLY_KEYSTONE_ROLE_MAP"


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


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    """Put auth_token in front of ``app.wsgi_app``, configured from ``conf``."""
    from keystonemiddleware import auth_token

    app.config[ROLE_MAP_KEY] = role_map_from_conf(conf)
    middleware_conf: dict[str, Any] = {
        "oslo_config_config": conf,
        # Unauthenticated requests go on to the views, which answer 401 where a
        # role is needed and serve the open endpoints.
        "delay_auth_decision": True,
    }
    app.wsgi_app = auth_token.AuthProtocol(app.wsgi_app, middleware_conf)  # type: ignore[method-assign]
    LOG.info("auth_strategy=keystone: tokens validated by keystonemiddleware auth_token")


def tally_role(keystone_roles: list[str], role_map: Mapping[str, str]) -> str:
    """The strongest Tally role granted by ``keystone_roles``, NO_ROLE if none."""
    names = (name.strip().lower() for name in keystone_roles)
    granted = {role_map[name] for name in names if name in role_map}
    for role in _PRECEDENCE:
        if role in granted:
            return role
    return NO_ROLE


def role_from_environ(environ: Mapping[str, Any]) -> str | None:
    """None without a token keystone confirmed; else the mapped role (maybe NO_ROLE).

    auth_token strips any client-sent identity headers before it sets its own, so
    these cannot be forged by the caller.
    """
    from flask import current_app

    if environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
        return None
    roles = [name for name in str(environ.get("HTTP_X_ROLES", "")).split(",") if name.strip()]
    return tally_role(roles, current_app.config[ROLE_MAP_KEY])
