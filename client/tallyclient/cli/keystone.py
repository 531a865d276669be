"""``tally --os-cloud NAME``: a keystone token and Tally's endpoint from clouds.yaml.

The cloud entry is read by openstacksdk's loader (``openstack.config``: the same
clouds.yaml/secure.yaml search path, ``OS_CLIENT_CONFIG_FILE``, auth plugins and
region/interface settings as every OpenStack client) and authenticated by
keystoneauth. The Reporting API is found in the token's catalog under
``SERVICE_TYPE`` (the cloud's interface, ``public`` by default) unless a URL is given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import requests

from tallyclient.api_url import describe_request_error

# The catalog service type Tally's Reporting API is registered under.
SERVICE_TYPE = "usage-history"


_CONNECT_TO = re.compile(r"(?:connection to|connect to|Request to) (\S+?):? ")


def _no_answer(exc: Exception) -> str:
    """Why keystone did not answer, in one line (its address and the reason)."""
    text = " ".join(str(exc).split())
    match = _CONNECT_TO.search(text)
    inner = exc.__context__
    if match and isinstance(inner, requests.RequestException):
        return describe_request_error(inner, match.group(1), service="keystone")
    return text if len(text) <= 200 else text[:197] + "..."


def _unscoped(cloud: str) -> str:
    # An unscoped token holds no roles and no catalog: Tally would refuse it (403)
    # and its endpoint cannot be found, so say what the entry lacks instead.
    return (f"cloud {cloud}: keystone gave an unscoped token (the entry names no project "
            "and the user has no default project): set project_name or project_id "
            "(that project's data) or system_scope: all (cloud-wide roles)")


class KeystoneError(Exception):
    """The cloud entry, keystone or the catalog cannot give a token or an endpoint."""


class CloudConfigError(KeystoneError):
    """The clouds.yaml entry is missing or incomplete (a usage error)."""


@dataclass(frozen=True)
class KeystoneAccess:
    token: str
    endpoint: str | None  # None when the caller gave a URL
    verify: bool | str  # the cloud's TLS setting: verify or not, or a CA bundle path


def access(cloud: str, *, want_endpoint: bool, timeout: float) -> KeystoneAccess:
    """Authenticate as ``cloud`` and (``want_endpoint``) find Tally in the catalog."""
    # Imported here: openstacksdk loads hundreds of modules, a bearer-token run needs none.
    import openstack.config
    from keystoneauth1 import exceptions as ksa_exceptions
    from keystoneauth1.identity.base import BaseIdentityPlugin
    from openstack import exceptions as sdk_exceptions

    try:
        region = openstack.config.OpenStackConfig().get_one(cloud)
        session = region.get_session()
    except (sdk_exceptions.ConfigException, ksa_exceptions.auth_plugins.AuthPluginException,
            ksa_exceptions.auth_plugins.MissingRequiredOptions) as exc:
        raise CloudConfigError(f"cloud {cloud}: {exc}") from None
    session.timeout = timeout
    try:
        token = session.get_token()
        # (an identity plugin; a plain token or endpoint plugin has no token data)
        if isinstance(session.auth, BaseIdentityPlugin) \
                and not session.auth.get_access(session).scoped:
            raise CloudConfigError(_unscoped(cloud))
        endpoint = None
        if want_endpoint:
            endpoint = session.get_endpoint(
                service_type=SERVICE_TYPE,
                interface=region.get_interface(SERVICE_TYPE) or "public",
                region_name=region.get_region_name(SERVICE_TYPE) or None,
            )
            if not endpoint:
                raise ksa_exceptions.EndpointNotFound()
    except ksa_exceptions.EndpointNotFound:
        raise KeystoneError(
            f"cloud {cloud}: no {SERVICE_TYPE} endpoint in the catalog (is Tally "
            "registered in keystone?); give --url to name the Reporting API"
        ) from None
    except ksa_exceptions.Unauthorized as exc:
        raise KeystoneError(f"cloud {cloud}: keystone refused the credentials: {exc}") from None
    except ksa_exceptions.ConnectionError as exc:
        # refused, timed out, TLS: one line, not keystoneauth's and urllib3's texts
        raise KeystoneError(f"cloud {cloud}: cannot reach keystone: {_no_answer(exc)}") from None
    except ksa_exceptions.ClientException as exc:
        raise KeystoneError(f"cloud {cloud}: keystone: {exc}") from None
    if not token:
        raise KeystoneError(f"cloud {cloud}: keystone gave no token")
    verify = session.verify
    return KeystoneAccess(token, endpoint, True if verify is None else verify)
