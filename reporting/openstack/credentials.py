"""The clouds.yaml entry a run authenticates with, through openstacksdk's loader.

Search: ``OS_CLIENT_CONFIG_FILE`` when set, and then that file only; otherwise
``clouds.yaml`` in the working directory, the user's config directory
(``$XDG_CONFIG_HOME/openstack``, else ``~/.config/openstack``) and ``/etc/openstack``,
in that order, first file found wins.  Not openstacksdk's own list: it also takes
``clouds.yml``/``clouds.json`` and the site directory ``/etc/xdg/openstack``, which
would outrank the ``/etc/openstack`` a deployment mounts.  A ``secure.yaml`` beside
the file found (or ``OS_CLIENT_SECURE_FILE``) is merged over it.  ``OS_CLOUD`` has
no effect: the adapter's ``os_cloud`` names the entry.  The stock loader
ignores ``OS_REGION_NAME``/``OS_INTERFACE`` for a named cloud; here they override
the entry's ``region_name``/``interface``, for every cloud the process syncs.

The file is read again on every run, so a rotated secret reaches the next sync.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from keystoneauth1 import exceptions as ks_exceptions
from openstack import exceptions as sdk_exceptions
from openstack.config import cloud_region, loader

from reporting.sync.observation import RunAborted

LOG = logging.getLogger(__name__)

FILE_NAME = "clouds.yaml"
SECURE_NAME = "secure.yaml"
SYSTEM_DIR = "/etc/openstack"


def _user_config_dir(environ: Mapping[str, str]) -> str:
    xdg = environ.get("XDG_CONFIG_HOME")
    if xdg:
        return os.path.join(xdg, "openstack")
    home = environ.get("HOME") or str(Path.home())
    return os.path.join(home, ".config", "openstack")


def candidate_files(environ: Mapping[str, str], cwd: str | None = None) -> list[str]:
    """The clouds.yaml locations searched, in order (``cwd``: the working directory)."""
    override = environ.get("OS_CLIENT_CONFIG_FILE")
    if override:
        return [override]
    directories = [cwd or os.getcwd(), _user_config_dir(environ), SYSTEM_DIR]
    return list(dict.fromkeys(os.path.join(d, FILE_NAME) for d in directories))


def describe_search(environ: Mapping[str, str]) -> str:
    """Which clouds.yaml a run would read now, in words (tally-reporting's start line)."""
    named = environ.get("OS_CLIENT_CONFIG_FILE")
    if named:
        missing = "" if os.path.isfile(named) else "; no such file yet: every sync fails until it exists"
        return f"{named} (OS_CLIENT_CONFIG_FILE{missing})"
    where = "the search path (OS_CLIENT_CONFIG_FILE unset)"
    found = next((path for path in candidate_files(environ) if os.path.isfile(path)), None)
    if found is None:
        return f"none found on {where}: every sync fails until one exists"
    return f"{found}, the first found on {where}"


def _secure_files(found: str, environ: Mapping[str, str]) -> list[str]:
    beside = str(Path(found).with_name(SECURE_NAME))
    override = environ.get("OS_CLIENT_SECURE_FILE")
    return [override, beside] if override else [beside]


def _is_app_credential(auth_type: str | None) -> bool:
    return (auth_type or "").replace("_", "").lower() in (
        "v3applicationcredential", "applicationcredential",
    )


def _refuse_tally_clouds_file(found: str) -> None:
    """Tally's clouds file lists clouds under 'clouds'; openstacksdk would fail on it
    with an AttributeError deep inside its loader."""
    import yaml

    try:
        # libyaml where PyYAML has it: this runs on every sync, before the loader
        # reads the same file again.
        loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        document = yaml.load(Path(found).read_text(), Loader=loader_class)  # noqa: S506 - a safe loader
    except (OSError, yaml.YAMLError):
        return  # the loader reports it in its own words
    if isinstance(document, Mapping) and isinstance(document.get("clouds"), list):
        raise RunAborted(
            f"{found} is Tally's clouds file (a list of clouds), not OpenStack's clouds.yaml: "
            "OS_CLIENT_CONFIG_FILE must name the clouds.yaml holding the credentials "
            "([sync] clouds_file names Tally's)")


def resolve_cloud(
    os_cloud: str, environ: Mapping[str, str] | None = None, cwd: str | None = None
) -> cloud_region.CloudRegion:
    """The entry ``os_cloud`` with its secure.yaml merged and the env overrides applied."""
    env = os.environ if environ is None else environ
    searched = candidate_files(env, cwd)
    found = next((path for path in searched if os.path.isfile(path)), None)
    if found is None:
        raise RunAborted(
            f'resolving the clouds.yaml entry "{os_cloud}": no clouds.yaml found; '
            f"searched {', '.join(searched)}"
        )
    _refuse_tally_clouds_file(found)
    overrides: dict[str, Any] = {}
    if env.get("OS_REGION_NAME"):
        overrides["region_name"] = env["OS_REGION_NAME"]
    if env.get("OS_INTERFACE"):
        overrides["interface"] = env["OS_INTERFACE"]
    try:
        config = loader.OpenStackConfig(
            config_files=[found], secure_files=_secure_files(found, env), vendor_files=[],
            load_envvars=False,
        )
        if os_cloud not in config.get_cloud_names():
            raise RunAborted(
                f'resolving the clouds.yaml entry "{os_cloud}": {found} has no such entry'
            )
        raw_auth = config.cloud_config["clouds"][os_cloud].get("auth") or {}
        auth_type = config.cloud_config["clouds"][os_cloud].get("auth_type")
        if _is_app_credential(auth_type) and not raw_auth.get("application_credential_secret"):
            raise RunAborted(
                f'authenticating against the cloud "{os_cloud}": '
                "You must provide an Application Credential Secret"
            )
        return config.get_one(os_cloud, **overrides)
    except ks_exceptions.OptionError as exc:
        raise RunAborted(f'authenticating against the cloud "{os_cloud}": {exc}') from None
    except sdk_exceptions.ConfigException as exc:
        raise RunAborted(f'resolving the clouds.yaml entry "{os_cloud}": {exc}') from None
