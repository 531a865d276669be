"""Authentication and roles of the Reporting API (SPEC §3.1).

``token``: bearer tokens from a YAML file ``{token: role}``; ``noauth``: every
request is admin (demo and tests only, warned about at every start); ``keystone``:
keystonemiddleware's auth_token in front, its roles mapped to Tally's.

Roles: ``ingest`` (POST /v1/events), ``read`` (queries), ``admin`` (everything,
including resource types, dead-letter replay and /internal/sync).
"""

from __future__ import annotations

import functools
import hmac
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from flask import Flask, current_app, g, request
from oslo_config import cfg

from reporting.api.errors import ApiError
from reporting.token_file import unusable_token_reason

LOG = logging.getLogger(__name__)

ROLES = ("ingest", "read", "admin")

api_auth_opts: list[cfg.Opt] = [
    cfg.StrOpt(
        "auth_strategy",
        default="token",
        choices=[
            ("token", "bearer tokens from tokens_file"),
            ("keystone", "keystonemiddleware auth_token"),
            ("noauth", "no authentication: demo and tests only"),
        ],
        help="How requests are authenticated.",
    ),
    cfg.StrOpt(
        "tokens_file",
        help="YAML file mapping bearer tokens to roles ({token: ingest|read|admin}); "
        "required with auth_strategy=token.",
    ),
]

F = TypeVar("F", bound=Callable[..., Any])


class AuthConfigError(ValueError):
    """The auth configuration cannot work; the service refuses to start."""


def load_tokens(path: str | None) -> dict[str, str]:
    """Read and check the tokens file: every key a non-empty string, every value a role."""
    if not path:
        raise AuthConfigError("[api] tokens_file is required with auth_strategy=token")
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise AuthConfigError(f"[api] tokens_file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise AuthConfigError(f"[api] tokens_file {path} is not valid YAML: {exc}") from None
    if not isinstance(document, dict) or not document:
        raise AuthConfigError(f"[api] tokens_file {path} must map tokens to roles")
    tokens: dict[str, str] = {}
    for number, (token, role) in enumerate(document.items(), start=1):
        if isinstance(token, (int, float)) and not isinstance(token, bool):
            raise AuthConfigError(
                f"[api] tokens_file {path}: entry {number}: the token {token!r} is read as a "
                f"number: quote it (\"{token}\": {role})")
        if not isinstance(token, str) or not token.strip():
            raise AuthConfigError(
                f"[api] tokens_file {path}: entry {number}: the token is not a non-empty "
                "string (quote it)")
        reason = unusable_token_reason(token)
        if reason is None and token != token.strip():
            reason = "starts or ends with white space, which a client's header loses"
        if reason:
            raise AuthConfigError(f"[api] tokens_file {path}: entry {number}: the token {reason}")
        if role not in ROLES:
            raise AuthConfigError(
                f"[api] tokens_file {path}: role {role!r} is not one of {', '.join(ROLES)}"
            )
        tokens[token] = role
    return tokens


def _role_from_token(tokens: dict[str, str]) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented:
        return None
    presented = presented.strip()
    for token, role in tokens.items():
        if hmac.compare_digest(token.encode(), presented.encode()):
            return role
    return None


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    """Resolve the strategy once at start; a bad configuration raises AuthConfigError."""
    strategy = conf.api.auth_strategy
    app.config["TALLY_AUTH_STRATEGY"] = strategy
    if strategy == "token":
        app.config["TALLY_TOKENS"] = load_tokens(conf.api.tokens_file)
    elif strategy == "noauth":
        LOG.warning("auth_strategy=noauth: every request is admin; never use this in production")
    elif strategy == "keystone":
        from reporting.api import keystone_auth

        keystone_auth.init_app(app, conf)


def current_role() -> str | None:
    """The caller's role for this request, None when unauthenticated."""
    if "tally_role" in g:
        return g.tally_role
    strategy = current_app.config["TALLY_AUTH_STRATEGY"]
    role: str | None
    if strategy == "noauth":
        role = "admin"
    elif strategy == "token":
        role = _role_from_token(current_app.config["TALLY_TOKENS"])
    else:
        from reporting.api import keystone_auth

        role = keystone_auth.role_from_environ(request.environ)
    g.tally_role = role
    return role


def check_role(required: str) -> None:
    """401 without valid credentials, 403 with a role that does not grant ``required``."""
    role = current_role()
    if role is None:
        raise ApiError(401, "unauthorized", "missing or invalid credentials")
    if role != required and role != "admin":
        raise ApiError(403, "forbidden", f"this request needs the {required} role")


def require_role(required: str) -> Callable[[F], F]:
    """Decorator for a view that needs ``required`` (admin is granted everything)."""
    if required not in ROLES:
        raise ValueError(f"unknown role {required}")

    def decorator(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            check_role(required)
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator
