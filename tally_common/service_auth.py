"""How Tally's services log in to the Reporting API: ``tally-collector`` and
``tally-sync`` (the clients that run unattended).

Three ways, one per ``[api] auth_strategy`` of the API they call:

- ``keystone``: a keystoneauth1 session loaded from ``[service_credentials]``, the
  group and option names ceilometer uses (keystoneauth's own auth and session
  options, plus ``interface`` and ``region_name``).  The token goes as
  ``X-Auth-Token``; keystoneauth renews it before it expires and once more when the
  API answers 401 (a revoked token).  The API's URL is the catalog's
  ``usage-history`` endpoint unless the service's own URL option is set;
- ``token``: the first line of the service's token file as ``Authorization: Bearer``;
- ``noauth``: nothing (an API with ``auth_strategy = noauth``: demo and tests).

Unset, the strategy follows what is configured: ``keystone`` when
``[service_credentials] auth_type`` is set, ``token`` when the token file is.  A
configuration that names neither (or both) can never log in as intended and is
refused at start, with the reason.

Requests answer a ``requests.Response`` (any status) or raise ``ApiNoAnswer``,
whose ``reason`` is ``timeout``, ``connection`` or ``unauthorized`` (keystone refused
the credentials, or has no endpoint) and whose text is one line an operator reads.
Each thread gets its own HTTP session; keystone's token is shared by all of them.

Imports nothing of Tally but ``mapping`` (the collector uses it).
"""

from __future__ import annotations

import copy
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
from keystoneauth1 import adapter as ks_adapter
from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import loading as ks_loading
from keystoneauth1 import session as ks_session
from oslo_config import cfg

from tally_common.api_url import ApiUrlError, check_base_url, describe_request_error
from tally_common.config_check import redact_url
from tally_common.token_file import TokenFileError, read_token_file

GROUP = "service_credentials"
SERVICE_TYPE = "usage-history"
STRATEGIES = ("keystone", "token", "noauth")

catalog_opts: list[cfg.Opt] = [
    cfg.StrOpt(
        "interface", default="public",
        choices=("public", "internal", "admin", "publicURL", "internalURL", "adminURL"),
        help="Which endpoint of keystone's catalog the service calls (the Reporting "
        f"API's, service type {SERVICE_TYPE}).",
    ),
    cfg.StrOpt(
        "region_name",
        help="Region of the catalog endpoints to use (unset: the only one).",
    ),
]


def strategy_opt(url_option: str, token_option: str) -> cfg.Opt:
    """The ``auth_strategy`` option of a service section (``[collector]``, ``[sync]``)."""
    return cfg.StrOpt(
        "auth_strategy",
        choices=[
            ("keystone", "log in with [service_credentials] (a keystone-mode API)"),
            ("token", f"send the bearer token of {token_option} (a token-mode API)"),
            ("noauth", "send no credentials (an API with auth_strategy noauth)"),
        ],
        help="How this service authenticates to the Reporting API; the API's own [api] "
        "auth_strategy. Unset: keystone when [service_credentials] auth_type is set, "
        f"token when {token_option} is set; with neither (or both) the service refuses "
        f"to start. With keystone, {url_option} unset means the catalog's "
        f"{SERVICE_TYPE} endpoint.",
    )


class ServiceAuthError(ValueError):
    """A configuration that can never log in; the message is one line naming why."""


class ApiNoAnswer(Exception):
    """A request that got no answer of the API (``reason``: a metric label)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason


def register_opts(conf: cfg.ConfigOpts) -> None:
    """Register ``[service_credentials]``: keystoneauth's auth and session options and
    the catalog's; the auth plugin's own options are registered once its type is read
    (``register_plugin_opts``)."""
    ks_loading.register_auth_conf_options(conf, GROUP)
    ks_loading.register_session_conf_options(conf, GROUP)
    conf.register_opts(catalog_opts, group=GROUP)


def register_plugin_opts(conf: cfg.ConfigOpts) -> None:
    """Register the options of the configured ``auth_type`` (``username``, ...) so that
    the check of the configuration files knows them; an unknown type is refused."""
    name = conf[GROUP].auth_type
    if not name:
        return
    try:
        options = ks_loading.get_auth_plugin_conf_options(name)
    except ks_exceptions.NoMatchingPlugin:
        raise ServiceAuthError(f"[{GROUP}] auth_type {name!r} is not a keystoneauth1 "
                               "plugin (e.g. password, v3applicationcredential)") from None
    conf.register_opts(options, group=GROUP)


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """For the sample files: the password plugin's options, as ceilometer lists them
    (any keystoneauth1 plugin works, e.g. ``v3applicationcredential``)."""
    plugin = []
    for opt in ks_loading.get_auth_plugin_conf_options("password"):
        # Required only once auth_type = password is set: a file without the group
        # must still read every listed option.
        listed = copy.copy(opt)
        listed.required = False
        plugin.append(listed)
    return [(GROUP, list(ks_loading.get_auth_common_conf_options()) + plugin
             + list(ks_loading.get_session_conf_options()) + list(catalog_opts))]


@dataclass(frozen=True)
class ServiceSettings:
    """Where a service's URL and token options are, for its messages."""

    section: str  # "collector", "sync"
    url_option: str  # "reporting_url", "api_url"
    token_option: str  # "token_file"


def _is_set(conf: cfg.ConfigOpts, section: str, name: str) -> bool:
    location = conf.get_location(name, section)
    return location is not None and location.location != cfg.Locations.opt_default


def choose_strategy(conf: cfg.ConfigOpts, settings: ServiceSettings) -> str:
    """The strategy the configuration asks for, or ServiceAuthError saying why none."""
    group = conf[settings.section]
    where = f"[{settings.section}]"
    explicit = group.auth_strategy
    has_keystone = bool(conf[GROUP].auth_type)
    has_token = bool(group[settings.token_option])
    if explicit == "keystone" and not has_keystone:
        raise ServiceAuthError(f"{where} auth_strategy = keystone needs [{GROUP}] auth_type "
                               "(e.g. password, with auth_url, username, password, "
                               "project_name, user_domain_name, project_domain_name)")
    if explicit == "token" and not has_token:
        raise ServiceAuthError(f"{where} auth_strategy = token needs {where} "
                               f"{settings.token_option}")
    if explicit == "noauth" and (has_keystone or has_token):
        given = f"[{GROUP}] auth_type" if has_keystone else f"{where} {settings.token_option}"
        raise ServiceAuthError(f"{where} auth_strategy = noauth sends no credentials, but "
                               f"{given} is set: set auth_strategy to the API's own")
    if explicit:
        return str(explicit)
    if has_keystone and has_token:
        raise ServiceAuthError(
            f"both [{GROUP}] auth_type and {where} {settings.token_option} are set: set "
            f"{where} auth_strategy to keystone or token (the Reporting API's own)")
    if has_keystone:
        return "keystone"
    if has_token:
        return "token"
    raise ServiceAuthError(
        f"no credentials for the Reporting API: set [{GROUP}] (auth_type, auth_url, "
        f"username, ...) for a keystone-mode API, {where} {settings.token_option} for a "
        f"token-mode API, or {where} auth_strategy = noauth for an API without "
        "authentication")


class ApiClient:
    """Requests to the Reporting API; ``describe`` names where they go."""

    def describe(self) -> str:
        raise NotImplementedError

    def request(self, method: str, path: str, *, timeout: float,
                data: bytes | None = None, params: Mapping[str, str] | None = None,
                headers: Mapping[str, str] | None = None) -> requests.Response:
        raise NotImplementedError

    def close(self) -> None:
        """Close this thread's HTTP session (the others close with their threads)."""


class _PerThread:
    def __init__(self) -> None:
        self._local = threading.local()

    def _mine(self, make: Any) -> Any:
        made = getattr(self._local, "value", None)
        if made is None:
            made = self._local.value = make()
        return made

    def _drop(self) -> Any:
        made = getattr(self._local, "value", None)
        self._local.value = None
        return made


class BearerClient(ApiClient):
    """``auth_strategy = token`` (the token given) or ``noauth`` (None)."""

    def __init__(self, base_url: str, token: str | None) -> None:
        self.base_url = base_url
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._sessions = _PerThread()

    def describe(self) -> str:
        return redact_url(self.base_url)

    def _session(self) -> requests.Session:
        def make() -> requests.Session:
            session = requests.Session()
            session.headers.update(self._headers)
            return session
        session: requests.Session = self._sessions._mine(make)
        return session

    def request(self, method: str, path: str, *, timeout: float,
                data: bytes | None = None, params: Mapping[str, str] | None = None,
                headers: Mapping[str, str] | None = None) -> requests.Response:
        url = self.base_url + path
        try:
            return self._session().request(method, url, data=data, params=params,
                                           headers=dict(headers or {}), timeout=timeout)
        except requests.Timeout as exc:
            raise ApiNoAnswer("timeout", describe_request_error(exc, url)) from None
        except requests.RequestException as exc:
            raise ApiNoAnswer("connection", describe_request_error(exc, url)) from None

    def close(self) -> None:
        session = self._sessions._drop()
        if session is not None:
            session.close()


_CONNECT_TO = re.compile(r"(?:connection to|connect to|Request to) (\S+?):? ")


class KeystoneClient(ApiClient):
    """``auth_strategy = keystone``: one auth plugin (so one token) for every thread's
    keystoneauth session."""

    def __init__(self, conf: cfg.ConfigOpts, endpoint_override: str | None) -> None:
        self._conf = conf
        group = conf[GROUP]
        try:
            self._auth = ks_loading.load_auth_from_conf_options(conf, GROUP)
        except ks_exceptions.ClientException as exc:
            raise ServiceAuthError(f"[{GROUP}] {_one_line(exc)}") from None
        if self._auth is None:
            raise ServiceAuthError(f"[{GROUP}] auth_type is not set")
        self._auth_url = str(getattr(group, "auth_url", "") or "")
        self._endpoint_override = endpoint_override
        self._interface = group.interface
        self._region = group.region_name
        self._adapters = _PerThread()
        self._adapter()  # the session options are read (and refused) at start

    def describe(self) -> str:
        where = f"interface {self._interface}" + (
            f", region {self._region}" if self._region else "")
        if self._endpoint_override:
            return f"{redact_url(self._endpoint_override)} (keystone login at {self._auth_url})"
        return f"keystone catalog {SERVICE_TYPE} endpoint ({where}; login at {self._auth_url})"

    def _adapter(self) -> ks_adapter.Adapter:
        def make() -> ks_adapter.Adapter:
            try:
                session: ks_session.Session = ks_loading.load_session_from_conf_options(
                    self._conf, GROUP, auth=self._auth)
            except (ks_exceptions.ClientException, ValueError, OSError) as exc:
                raise ServiceAuthError(f"[{GROUP}] {_one_line(exc)}") from None
            return ks_adapter.Adapter(
                session, service_type=SERVICE_TYPE, interface=self._interface,
                region_name=self._region, endpoint_override=self._endpoint_override)
        adapter: ks_adapter.Adapter = self._adapters._mine(make)
        return adapter

    def request(self, method: str, path: str, *, timeout: float,
                data: bytes | None = None, params: Mapping[str, str] | None = None,
                headers: Mapping[str, str] | None = None) -> requests.Response:
        try:
            # authenticated: the token as X-Auth-Token; a 401 invalidates it and the
            # request is sent once more with a new one (allow_reauth).
            response: requests.Response = self._adapter().request(
                path, method, authenticated=True, allow_reauth=True, raise_exc=False,
                data=data, params=params, headers=dict(headers or {}), timeout=timeout,
                connect_retries=0, log=False)
        except ks_exceptions.ConnectTimeout as exc:
            raise ApiNoAnswer("timeout", self._no_answer(exc)) from None
        except ks_exceptions.ConnectionError as exc:
            raise ApiNoAnswer("connection", self._no_answer(exc)) from None
        except ks_exceptions.EndpointNotFound:
            where = f"interface {self._interface}" + (
                f", region {self._region}" if self._region else "")
            raise ApiNoAnswer(
                "unauthorized",
                f"keystone's catalog has no {SERVICE_TYPE} endpoint ({where}): register the "
                "Reporting API's endpoint, or set the service's URL option") from None
        except ks_exceptions.HttpError as exc:
            # Keystone's own answer to the login (the API's answers are returned).
            raise ApiNoAnswer(
                "unauthorized",
                f"keystone at {self._auth_url} refused the [{GROUP}] login: HTTP "
                f"{exc.http_status} {_one_line(exc)}") from None
        except ks_exceptions.ClientException as exc:
            raise ApiNoAnswer("unauthorized", f"keystone login failed: {_one_line(exc)}") from None
        return response

    def _no_answer(self, exc: ks_exceptions.ClientException) -> str:
        """One line: which server (keystone or the API) did not answer, and why."""
        text = _one_line(exc)
        match = _CONNECT_TO.search(text)
        url = match.group(1) if match else ""
        service = "keystone" if url and self._auth_url and _same_host(url, self._auth_url) \
            else "the Reporting API"
        inner = exc.__context__
        if isinstance(inner, requests.RequestException) and url:
            return describe_request_error(inner, url, service=service)
        return f"{service} did not answer: {text[:300]}"

    def close(self) -> None:
        adapter = self._adapters._drop()
        if adapter is not None:
            adapter.session.session.close()


def _same_host(first: str, second: str) -> bool:
    return urlsplit(first).netloc == urlsplit(second).netloc


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


def api_client(conf: cfg.ConfigOpts, settings: ServiceSettings,
               url: str | None, url_is_set: bool | None = None) -> ApiClient:
    """The client the configuration asks for, checked now (ServiceAuthError).

    ``url``: the service's URL option's value; ``url_is_set`` whether the operator
    set it (a default URL does not override keystone's catalog)."""
    where = f"[{settings.section}] {settings.url_option}"
    if url_is_set is None:
        url_is_set = _is_set(conf, settings.section, settings.url_option)
    base_url = None
    if url and url_is_set:  # a malformed URL is named first, whatever the strategy
        try:
            base_url = check_base_url(where, url)
        except ApiUrlError as exc:
            raise ServiceAuthError(str(exc)) from None
    strategy = choose_strategy(conf, settings)
    if strategy == "keystone":
        return KeystoneClient(conf, base_url)
    try:
        base_url = check_base_url(where, url)
    except ApiUrlError as exc:
        raise ServiceAuthError(str(exc)) from None
    token = None
    if strategy == "token":
        path = conf[settings.section][settings.token_option]
        try:
            token = read_token_file(path)
        except TokenFileError as exc:
            raise ServiceAuthError(
                f"[{settings.section}] {settings.token_option} {exc}") from None
    return BearerClient(base_url, token)
