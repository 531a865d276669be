"""``[sync]`` options of tally-reporting and tally-sync (aliases: ``tally_common.env_aliases``)."""

from __future__ import annotations

from oslo_config import cfg

from tally_common import service_auth

sync_opts: list[cfg.Opt] = [
    cfg.StrOpt(
        "clouds_file",
        help="Tally's clouds file (e.g. /etc/tally/tally-clouds.yaml; not OpenStack's "
        "clouds.yaml): YAML listing the clouds to reconcile ({clouds: [{name, platform, "
        "adapter, adapter_config, clock}]}). Read and checked when the service starts; "
        "unset, no cloud can be synced (every sync answers 404).",
    ),
    cfg.FloatOpt(
        "budget_s",
        default=45.0,
        min=1.0,
        help="Seconds one sync run may take; a run that does not fit fails and moves "
        "nothing. Environment alias: TALLY_REPORTING_SYNC_BUDGET_S.",
    ),
    cfg.FloatOpt(
        "settle_s",
        default=60.0,
        min=0.0,
        help="Settle window: a difference the platform or the projection dates within "
        "this many seconds before the run (or after it) is deferred to the next run. "
        "0 turns the window off. Environment alias: TALLY_REPORTING_SYNC_SETTLE_S.",
    ),
    cfg.FloatOpt(
        "deletion_window_max_days",
        default=30.0,
        min=0.01,
        help="The longest window of nova's deleted servers a run asks for: a run asks "
        "for every server deleted since the last completed run (less the settle "
        "window), however long an outage lasted, and only a longer gap is clamped to "
        "this many days (counted in tally_sync_deletion_windows_clamped_total; the "
        "instance deletes before the clamp are then dated at the poll). Keep it "
        "within the age at which the cloud archives deleted rows (nova-manage db "
        "archive_deleted_rows --before).",
    ),
    cfg.FloatOpt(
        "full_listing_interval_s",
        default=0.0,
        min=0.0,
        help="Seconds between full runs of a cloud. A full run lists every resource and "
        "deletes what is absent; the runs between list only what changed since the last "
        "completed run (nova changes-since, cinder created_at/updated_at from "
        "microversion 3.60, neutron changed_since, glance updated_at; load balancers "
        "are always listed whole), book creates, updates and nova's reported deletes, "
        "and delete nothing for being absent. A run is full when none completed before, "
        "or the last completed full run started this long before it. 0: every run is "
        "full.",
    ),
    cfg.StrOpt(
        "api_url",
        default="http://127.0.0.1:8779",
        help="tally-sync: base URL of the Reporting API whose /internal/sync it calls.",
    ),
    service_auth.strategy_opt("[sync] api_url", "[sync] token_file"),
    cfg.StrOpt(
        "token_file",
        help="tally-sync, auth_strategy token: file holding the bearer token of an "
        "admin-role caller (its first line).",
    ),
]
