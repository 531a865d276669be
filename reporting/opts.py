"""Every option of tally-reporting, for oslo-config-generator and registration.

Options are declared beside the code that reads them; this module only collects
them (entry point ``oslo.config.opts: tally.reporting``).
"""

from __future__ import annotations

from oslo_config import cfg

from reporting import future
from reporting.api import auth, events, keystone_auth, read_limits
from reporting.billing import handoff
from reporting.db import engine, replica
from reporting.serve_options import serve_opts
from reporting.sync import options as sync_options
from tally_common import service_auth

_GROUPS: list[tuple[str, list[cfg.Opt]]] = [
    ("database", engine.database_opts),
    ("database", replica.replica_opts),
    ("api", auth.api_auth_opts),
    ("api", events.api_body_opts),
    ("ingest", events.ingest_opts),
    ("ingest", future.future_opts),
    ("api", serve_opts),
    ("api", keystone_auth.api_keystone_opts),
    ("api", read_limits.api_read_opts),
    ("sync", sync_options.sync_opts),
    ("handoff", handoff.handoff_opts),
]


def list_opts() -> list[tuple[str, list[cfg.Opt]]]:
    """Tally's own groups (every option registered) and, for the sample,
    ``[service_credentials]`` of tally-sync (keystoneauth's; see ``registered``)."""
    return registered() + service_auth.list_opts()


def registered() -> list[tuple[str, list[cfg.Opt]]]:
    return [(group, list(opts)) for group, opts in _GROUPS]


def register_opts(conf: cfg.ConfigOpts) -> None:
    for group, opts in _GROUPS:
        conf.register_opts(opts, group=group)
    # tally-sync's login; the auth plugin's options once its auth_type is read.
    service_auth.register_opts(conf)
