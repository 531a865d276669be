"""Authentication and roles of the Reporting API (docs/reporting-queries.md).

``token``: bearer tokens from a YAML file ``{token: role}`` (or ``{token: {role:
project_reader, project_id: P}}``); ``noauth``: every request is admin (demo and
tests only, warned about at every start); ``keystone``: keystonemiddleware's
auth_token in front, its roles mapped to Tally's and its project scope kept.

Roles: ``ingest`` (POST /v1/events), ``read`` (queries, every project),
``project_reader`` (the project-scoped queries, one project: see
``reporting.api.project_scope``), ``admin`` (everything, including resource types,
dead-letter replay and /internal/sync).
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

from reporting.api import keystone_auth
from reporting.api.callers import (
    ACCOUNT_READER,
    PROJECT_READER,
    ROLES,
    AuthConfigError,
    Caller,
)
from reporting.api.errors import ApiError
from reporting.yaml_errors import where_and_why
from tally_common.token_file import unusable_token_reason

LOG = logging.getLogger(__name__)

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
        help="YAML file mapping bearer tokens to roles ({token: ingest|read|admin}, or "
        "{token: {role: project_reader, project_id: P}} for one project's reader, "
        "{token: {role: account_reader, account_id: A}} for one billing account's); "
        "required with auth_strategy=token.",
    ),
]

F = TypeVar("F", bound=Callable[..., Any])


_BOUND_ROLES = {PROJECT_READER: "project_id", ACCOUNT_READER: "account_id"}


def _caller_of(path: str, token_value: object) -> Caller:
    """A tokens-file value: a role name, ``{role: project_reader, project_id: P}`` or
    ``{role: account_reader, account_id: A}``."""
    if isinstance(token_value, dict):
        role = token_value.get("role")
        member = _BOUND_ROLES.get(role) if isinstance(role, str) else None
        bound = token_value.get(member) if member else None
        if member is None or set(token_value) != {"role", member} \
                or not isinstance(bound, str) or not bound.strip():
            raise AuthConfigError(
                f"[api] tokens_file {path}: a mapping value must be exactly "
                "{role: project_reader, project_id: <non-empty project id>} or "
                "{role: account_reader, account_id: <non-empty account id>}"
            )
        if role == ACCOUNT_READER:
            return Caller(ACCOUNT_READER, account_id=bound)
        return Caller(PROJECT_READER, bound)
    if token_value in _BOUND_ROLES:
        member = _BOUND_ROLES[str(token_value)]
        what = "a project" if member == "project_id" else "an account"
        raise AuthConfigError(
            f"[api] tokens_file {path}: role {token_value} needs {what}: "
            f"{{role: {token_value}, {member}: ...}}"
        )
    if token_value not in ROLES:
        raise AuthConfigError(
            f"[api] tokens_file {path}: role {token_value!r} is not one of {', '.join(ROLES)}"
        )
    return Caller(str(token_value))


def load_tokens(path: str | None) -> dict[str, Caller]:
    """Read and check the tokens file: every key a non-empty string, every value a role
    (or a project reader's ``{role, project_id}``)."""
    if not path:
        raise AuthConfigError("[api] tokens_file is required with auth_strategy=token")
    try:
        document = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise AuthConfigError(f"[api] tokens_file {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise AuthConfigError(
            f"[api] tokens_file {path} is not valid YAML{where_and_why(exc)}") from None
    if not isinstance(document, dict) or not document:
        raise AuthConfigError(f"[api] tokens_file {path} must map tokens to roles")
    tokens: dict[str, Caller] = {}
    for number, (token, value) in enumerate(document.items(), start=1):
        if isinstance(token, (int, float)) and not isinstance(token, bool):
            raise AuthConfigError(
                f"[api] tokens_file {path}: entry {number}: the token {token!r} is read as a "
                f"number: quote it (\"{token}\": {value})")
        if not isinstance(token, str) or not token.strip():
            raise AuthConfigError(
                f"[api] tokens_file {path}: entry {number}: the token is not a non-empty "
                "string (quote it)")
        reason = unusable_token_reason(token)
        if reason is None and token != token.strip():
            reason = "starts or ends with white space, which a client's header loses"
        if reason:
            raise AuthConfigError(f"[api] tokens_file {path}: entry {number}: the token {reason}")
        tokens[token] = _caller_of(path, value)
    return tokens


def _caller_from_token(tokens: dict[str, Caller]) -> Caller | None:
    header = request.headers.get("Authorization", "")
    scheme, _, presented = header.partition(" ")
    if scheme.lower() != "bearer" or not presented:
        return None
    presented = presented.strip()
    for token, caller in tokens.items():
        if hmac.compare_digest(token.encode(), presented.encode()):
            return caller
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
        keystone_auth.init_app(app, conf)


def current_caller() -> Caller | None:
    """The caller of this request, None when unauthenticated."""
    if "tally_caller" in g:
        return g.tally_caller
    strategy = current_app.config["TALLY_AUTH_STRATEGY"]
    caller: Caller | None
    if strategy == "noauth":
        caller = Caller("admin")
    elif strategy == "token":
        caller = _caller_from_token(current_app.config["TALLY_TOKENS"])
    else:
        caller = keystone_auth.caller_from_environ(request.environ)
    g.tally_caller = caller
    return caller


def current_role() -> str | None:
    """The caller's role for this request, None when unauthenticated."""
    caller = current_caller()
    return caller.role if caller is not None else None


def authenticated_caller() -> Caller:
    """The caller; 401 without valid credentials."""
    caller = current_caller()
    if caller is None:
        raise ApiError(401, "unauthorized", "missing or invalid credentials")
    return caller


def check_role(*required: str) -> None:
    """401 without valid credentials, 403 with a role that grants none of ``required``."""
    caller = authenticated_caller()
    if caller.role not in required and caller.role != "admin":
        raise ApiError(403, "forbidden", with_note(
            f"this request needs the {' or '.join(required)} role", caller))


def with_note(message: str, caller: Caller) -> str:
    """A 403's message, with why the token's scope granted less, if it did."""
    return f"{message}: {caller.note}" if caller.note else message


def require_role(*required: str) -> Callable[[F], F]:
    """Decorator for a view that needs one of ``required`` (admin is granted everything)."""
    if not required or any(role not in ROLES or role in _BOUND_ROLES for role in required):
        # A project or account reader's views use reporting.api.project_scope's decorators.
        raise ValueError(f"unknown role in {required}")

    def decorator(view: F) -> F:
        @functools.wraps(view)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            check_role(*required)
            return view(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorator
