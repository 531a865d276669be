"""The python-openstackclient plugin module (entry point ``openstack.cli.extension``).

OSC loads it, adds ``--os-tally-api-version`` to its parser, and builds the client
lazily with :func:`make_client` the first time a ``tally`` command asks for
``self.app.client_manager.tally``. The commands are the ``openstack.tally.v1``
entry points (``tallyclient.osc.v1``).
"""

from __future__ import annotations

import argparse
from typing import Any

from tallyclient.cli.http import ApiClient
from tallyclient.cli.keystone import SERVICE_TYPE

DEFAULT_API_VERSION = "1"
API_NAME = "tally"
API_VERSION_OPTION = "os_tally_api_version"
API_VERSIONS = ("1",)
# Seconds to wait for each answer of the Reporting API when OSC sets no timeout.
DEFAULT_TIMEOUT_S = 60.0


def make_client(instance: Any) -> ApiClient:
    """The Reporting API client for OSC's ClientManager: its keystone token and the
    catalog's ``usage-history`` endpoint (or the cloud's
    ``usage_history_endpoint_override``), with its TLS settings."""
    from keystoneauth1.exceptions import EndpointNotFound
    from osc_lib import exceptions

    try:
        endpoint = instance.get_endpoint_for_service_type(
            SERVICE_TYPE, region_name=instance.region_name, interface=instance.interface)
    except EndpointNotFound:
        endpoint = None
    if not endpoint:
        raise exceptions.CommandError(
            f"no {SERVICE_TYPE} endpoint in the catalog (is Tally registered in "
            f"keystone?); set usage_history_endpoint_override in the cloud's clouds.yaml "
            "entry to name the Reporting API"
        )
    session = instance.session
    client = ApiClient(endpoint, None, session.timeout or DEFAULT_TIMEOUT_S,
                       keystone_token=session.get_token())
    client.session.verify = session.verify
    return client


def build_option_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--os-tally-api-version", metavar="<tally-api-version>",
        default=None, help=f"Tally Reporting API version (default {DEFAULT_API_VERSION})",
    )
    return parser
