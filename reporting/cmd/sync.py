"""``tally-sync --config-file F [CLOUD ...] [--at T] [--full]``: one sync run per cloud.

What a CronJob or a systemd timer runs.  It calls ``POST /internal/sync/{cloud}``
of the Reporting API at ``[sync] api_url`` (or, logged in with ``[service_credentials]``
and api_url unset, keystone's ``usage-history`` endpoint) as an admin-role caller
(``tally_common.service_auth``: keystone's session or the token of ``[sync] token_file``),
one cloud after another (every cloud of the clouds file when none is
named), prints one line per run and exits 1 if any run did not complete.

At start it checks ``[sync] api_url`` and names the API it calls.  A cloud marked
``clock: simulated`` in the clouds file (``tally-simcloud``) needs ``--at``: a run
booked at wall time would top the run list of a simulated month forever; an ``--at``
beyond that cloud's own clock (``clock_url``) is refused the same way, before any run.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

import requests
from oslo_config import cfg

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting.cmd import ConfigError, load_conf, setup_logging
from reporting.sync.stats import describe_deferred
from tally_common.service_auth import (
    ApiClient,
    ApiNoAnswer,
    ServiceAuthError,
    ServiceSettings,
    api_client,
)

if TYPE_CHECKING:
    from reporting.sync.clouds import CloudEntry

PROG = "tally-sync"
# The API holds a sync's response open for the budget and a little more.
RESPONSE_MARGIN_S = 30.0

cli_opts: list[cfg.Opt] = [
    cfg.MultiStrOpt("cloud", positional=True, required=False, default=[],
                    help="Clouds to sync (default: every cloud of [sync] clouds_file)."),
    cfg.StrOpt("at", help="The told instant (RFC 3339), for a simulated cloud."),
    cfg.BoolOpt("full", default=False,
                help="A full run (every resource listed, the absence pass run) whatever "
                "[sync] full_listing_interval_s says, e.g. after an outage."),
]


SETTINGS = ServiceSettings("sync", "api_url", "token_file")


def _client(conf: cfg.ConfigOpts) -> ApiClient:
    try:
        return api_client(conf, SETTINGS, conf.sync.api_url)
    except ServiceAuthError as exc:
        raise ConfigError(str(exc)) from None


def _clouds(conf: cfg.ConfigOpts, at: str | None) -> tuple[list[str], list[str]]:
    """(the clouds to sync, the clouds skipped: collected but not reconciled)."""
    from reporting.sync.clouds import CloudsFileError, load_clouds_file

    try:
        # Read even when clouds are named: it says which clouds need --at.
        entries = load_clouds_file(conf.sync.clouds_file)
    except CloudsFileError as exc:
        if conf.cloud:
            entries = {}  # the API checks the names; this host may lack the file
        else:
            raise ConfigError(str(exc)) from None
    named = list(conf.cloud) or list(entries)
    if not named:
        raise ConfigError("no cloud to sync: name one or set [sync] clouds_file")
    skipped = [name for name in named if name in entries and not entries[name].reconciled]
    clouds = [name for name in named if name not in skipped]
    simulated = [name for name in clouds if name in entries and entries[name].clock == "simulated"]
    if simulated and at is None:
        raise ConfigError(
            f"cloud {simulated[0]!r} runs on a simulated clock (clock: simulated in "
            f"{conf.sync.clouds_file}): pass --at T, T from the simulated cloud's "
            "GET /_sim/clock")
    if at is not None:
        _check_told_instant([entries[name] for name in clouds if name in entries], at)
    return clouds, skipped


def _check_told_instant(entries: list[CloudEntry], at: str) -> None:
    """Refuse --at beyond a simulated cloud's clock here, before any run (the API
    checks it too, for callers that do not read the clouds file)."""
    from reporting.sync.told_instant import (
        ClockUnreadable,
        ToldInstantRefused,
        check_told_instant,
    )

    for entry in entries:
        try:
            check_told_instant(entry, parse_timestamp(at))
        except ToldInstantRefused as exc:
            raise ConfigError(f"--at {exc}") from None
        except ClockUnreadable:
            pass  # the API, which may reach it, decides (503 when it cannot either)


def _reasons(client: ApiClient, cloud: str, run_id: str) -> str:
    """The failed run's reasons, read back from GET /v1/sync-runs (best effort)."""
    try:
        response = client.request("GET", "/v1/sync-runs",
                                  params={"cloud": cloud, "limit": "50"}, timeout=30)
        runs = response.json().get("items", []) if response.status_code == 200 else []
    except (ApiNoAnswer, ValueError, AttributeError):
        runs = []
    for run in runs:
        if isinstance(run, dict) and run.get("id") == run_id:
            errors = (run.get("stats") or {}).get("errors") or []
            return "; ".join(" ".join(str(error).split()) for error in errors)
    return "its reasons are in GET /v1/sync-runs"


def _describe(cloud: str, response: requests.Response,
              client: ApiClient) -> tuple[bool, str]:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    if response.status_code == 200:
        stats = body.get("stats", {})
        kind = ""
        if stats.get("kind") == "incremental":
            kind = f"; incremental (changes since {stats.get('changed_since')})"
        return True, (f"{cloud}: run {body.get('id')} completed: created {stats.get('created')} "
                      f"(restated {stats.get('restated', 0)}), "
                      f"updated {stats.get('updated')}, deleted {stats.get('deleted')}, "
                      f"deferred {describe_deferred(stats.get('deferred'))}{kind}")
    if response.status_code == 500 and "run_id" in body:
        reasons = _reasons(client, cloud, str(body["run_id"]))
        return False, f"{cloud}: run {body['run_id']} failed: {reasons}"
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else None
    return False, f"{cloud}: HTTP {response.status_code}: {message or response.reason}"


def run(conf: cfg.ConfigOpts) -> int:
    at = None
    if conf.at:
        try:
            at = format_timestamp(parse_timestamp(conf.at))
        except TimestampError as exc:
            raise ConfigError(f"--at: {exc}") from None
    clouds, skipped = _clouds(conf, at)
    client = _client(conf)
    timeout = float(conf.sync.budget_s) + RESPONSE_MARGIN_S
    print(f"Reporting API: {client.describe()}" + (f"; told instant {at}" if at else ""))
    for cloud in skipped:
        print(f"{cloud}: skipped: collected but not reconciled (its clouds-file entry "
              "names no os_cloud)")
    failed = 0
    for cloud in clouds:
        path = f"/internal/sync/{quote(cloud, safe='')}"
        try:
            params = {"at": at} if at else {}
            if conf.full:
                params["full"] = "true"
            response = client.request("POST", path, params=params or None, timeout=timeout)
        except ApiNoAnswer as exc:
            what = "did not answer" if exc.reason != "unauthorized" else "was not reached"
            print(f"{cloud}: the Reporting API {what}: {exc}")
            failed += 1
            continue
        ok, line = _describe(cloud, response, client)
        print(line)
        failed += not ok
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        conf = load_conf(argv, prog=PROG, cli_opts=cli_opts)
        setup_logging(conf, PROG, to_stderr=True)
        return run(conf)
    except ConfigError as exc:
        print(f"{PROG}: configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
