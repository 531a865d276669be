"""Keystone's side of the simulated cloud: users, application credentials, tokens.

Tokens are opaque random strings held in memory.  An application credential may
carry access rules; :func:`access_allowed` applies them the way keystonemiddleware
does in front of each API (``*`` one path segment, ``**`` across ``/``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import secrets
import threading
from collections.abc import Callable
from functools import lru_cache
from typing import Any

ADMIN_ROLE = "admin"
MEMBER_ROLE = "member"
# Keystone's default policy lets a token holding one of these validate other tokens
# (``identity:validate_token``: service or admin), as keystonemiddleware does.
SERVICE_ROLE = "service"
VALIDATOR_ROLES = frozenset({ADMIN_ROLE, SERVICE_ROLE})
# keystone's [token] expiration default: one hour.
DEFAULT_TOKEN_TTL = dt.timedelta(hours=1)
DOMAIN_ID = "default"
DOMAIN_NAME = "Default"

# The eight GET requests a reconciliation run sends: a credential that only reads
# (docs/reconciliation.md).
READ_ONLY_RULES: tuple[dict[str, str], ...] = (
    {"service": "compute", "method": "GET", "path": "/**/servers/detail"},
    {"service": "compute", "method": "GET", "path": "/**/flavors/detail"},
    {"service": "compute", "method": "GET", "path": "/**/"},
    {"service": "block-storage", "method": "GET", "path": "/**/volumes/detail"},
    {"service": "block-storage", "method": "GET", "path": "/**/types"},
    {"service": "network", "method": "GET", "path": "/**/floatingips"},
    {"service": "image", "method": "GET", "path": "/**/images"},
    {"service": "load-balancer", "method": "GET", "path": "/**/lbaas/loadbalancers"},
)


@dataclasses.dataclass(frozen=True)
class User:
    id: str
    name: str
    password: str
    project_id: str
    project_name: str
    roles: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class AppCredential:
    id: str
    name: str
    secret: str
    user: User
    roles: tuple[str, ...]
    access_rules: tuple[dict[str, str], ...] | None  # None: unrestricted


@dataclasses.dataclass(frozen=True)
class Token:
    value: str
    user: User
    roles: tuple[str, ...]
    app_credential: AppCredential | None
    issued_at: dt.datetime
    expires_at: dt.datetime
    audit_id: str  # names the token in logs without revealing it

    @property
    def can_validate(self) -> bool:
        return bool(VALIDATOR_ROLES.intersection(self.roles))

    @property
    def is_admin(self) -> bool:
        return ADMIN_ROLE in self.roles

    @property
    def project_id(self) -> str:
        return self.user.project_id


class AuthError(Exception):
    """Keystone refuses the credentials (401)."""


def _wall_clock() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


class Identity:
    """Users, application credentials and the tokens issued, in memory.

    A token lives ``token_ttl`` (keystone's ``[token] expiration``) and can be revoked;
    an expired or revoked token no longer validates.
    """

    def __init__(self, token_ttl: dt.timedelta = DEFAULT_TOKEN_TTL,
                 clock: Callable[[], dt.datetime] = _wall_clock) -> None:
        # The instant tokens are issued and checked at (a test's own clock expires a
        # token without waiting for it).
        self.clock = clock
        self.users: dict[str, User] = {}
        self.app_credentials: dict[str, AppCredential] = {}
        self.token_ttl = token_ttl
        self._tokens: dict[str, Token] = {}
        self._lock = threading.Lock()

    def add_user(self, user: User) -> None:
        self.users[user.name] = user

    def add_application_credential(self, user_name: str, name: str, *,
                                   roles: tuple[str, ...] | None = None,
                                   access_rules: list[dict[str, str]] | None = None,
                                   ) -> AppCredential:
        """Create an application credential of ``user_name`` (secret generated)."""
        user = self.users[user_name]
        for rule in access_rules or ():
            if set(rule) != {"service", "method", "path"}:
                raise ValueError(f"an access rule needs exactly service, method, path: {rule}")
        cred = AppCredential(id=secrets.token_hex(16), name=name,
                             secret=secrets.token_urlsafe(24), user=user,
                             roles=roles if roles is not None else user.roles,
                             access_rules=None if access_rules is None else tuple(access_rules))
        with self._lock:
            self.app_credentials[cred.id] = cred
        return cred

    def revoke_application_credential(self, cred_id: str) -> None:
        with self._lock:
            self.app_credentials.pop(cred_id, None)
            self._tokens = {k: t for k, t in self._tokens.items()
                            if t.app_credential is None or t.app_credential.id != cred_id}

    def authenticate(self, body: Any) -> Token:
        """Check a ``POST /v3/auth/tokens`` body and issue a token."""
        try:
            identity = body["auth"]["identity"]
            methods = identity["methods"]
        except (KeyError, TypeError):
            raise AuthError("Expecting to find identity in auth.") from None
        if methods == ["password"]:
            return self._password(identity.get("password", {}), body["auth"].get("scope"))
        if methods == ["application_credential"]:
            return self._app_credential(identity.get("application_credential", {}))
        raise AuthError(f"Unsupported authentication methods {methods!r}.")

    def _password(self, password: Any, scope: Any) -> Token:
        user_doc = password.get("user", {}) if isinstance(password, dict) else {}
        user = self.users.get(user_doc.get("name", "")) or next(
            (u for u in self.users.values() if u.id == user_doc.get("id")), None)
        if user is None or not secrets.compare_digest(str(user_doc.get("password", "")),
                                                       user.password):
            raise AuthError("The request you have made requires authentication.")
        project = (scope or {}).get("project") if isinstance(scope, dict) else None
        if project is not None and project.get("name", user.project_name) != user.project_name \
                and project.get("id", user.project_id) != user.project_id:
            raise AuthError("User has no access to project.")
        return self._issue(user, user.roles, None)

    def _app_credential(self, doc: Any) -> Token:
        if not isinstance(doc, dict):
            raise AuthError("Invalid application credential.")
        cred = self.app_credentials.get(doc.get("id", ""))
        if cred is None and "name" in doc:
            user_name = (doc.get("user") or {}).get("name")
            cred = next((c for c in self.app_credentials.values()
                         if c.name == doc["name"] and c.user.name == user_name), None)
        if cred is None or not secrets.compare_digest(str(doc.get("secret", "")), cred.secret):
            raise AuthError("The request you have made requires authentication.")
        return self._issue(cred.user, cred.roles, cred)

    def _issue(self, user: User, roles: tuple[str, ...], cred: AppCredential | None) -> Token:
        # Keystone's instants have whole microseconds at most; keep them to the second
        # so the rendered expires_at is exactly the one enforced.
        now = self.clock().replace(microsecond=0)
        token = Token(secrets.token_hex(32), user, roles, cred, now, now + self.token_ttl,
                      secrets.token_urlsafe(16))
        with self._lock:
            self._tokens[token.value] = token
        return token

    def issue_for(self, user_name: str) -> Token:
        """A token of ``user_name`` scoped to its project, without a password (tests)."""
        user = self.users[user_name]
        return self._issue(user, user.roles, None)

    def validate(self, value: str | None) -> Token | None:
        """The token, or None when unknown, revoked or expired."""
        if not value:
            return None
        token = self._tokens.get(value)
        if token is None or token.expires_at <= self.clock():
            return None
        return token

    def revoke(self, value: str) -> bool:
        """Revoke a token (``DELETE /v3/auth/tokens``); False if it was not valid."""
        with self._lock:
            return self._tokens.pop(value, None) is not None


@lru_cache(maxsize=256)
def _path_regex(pattern: str) -> re.Pattern[str]:
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]+")
            i += 1
        elif pattern[i] == "{":
            end = pattern.find("}", i)
            if end < 0:
                out.append(re.escape(pattern[i:]))
                break
            out.append("[^/]+")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("^" + "".join(out) + "$")


def access_allowed(token: Token, service_type: str, catalog_types: frozenset[str],
                   method: str, path: str) -> bool:
    """keystonemiddleware's access-rule check for a request made with ``token``.

    ``service_type`` is the API's ``[keystone_authtoken] service_type``; a rule applies
    only when that type is in the catalog.  A token without rules passes.
    """
    cred = token.app_credential
    if cred is None or cred.access_rules is None:
        return True
    if service_type not in catalog_types:
        return False
    for rule in cred.access_rules:
        if rule["service"] == service_type and rule["method"] == method \
                and _path_regex(rule["path"]).match(path):
            return True
    return False
