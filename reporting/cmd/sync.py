"""``tally-sync --config-file F [CLOUD ...] [--at T]``: one sync run per cloud.

What a CronJob or a systemd timer runs.  It calls ``POST /internal/sync/{cloud}``
of the Reporting API at ``[sync] api_url`` with the admin token in ``[sync]
token_file``, one cloud after another (every cloud of the clouds file when none is
named), prints one line per run and exits 1 if any run did not complete.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from urllib.parse import quote

import requests
from oslo_config import cfg

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting.cmd import ConfigError, load_conf, one_line
from reporting.token_file import TokenFileError, read_token_file

PROG = "tally-sync"
# The API holds a sync's response open for the budget and a little more.
RESPONSE_MARGIN_S = 30.0

cli_opts: list[cfg.Opt] = [
    cfg.MultiStrOpt("cloud", positional=True, required=False, default=[],
                    help="Clouds to sync (default: every cloud of [sync] clouds_file)."),
    cfg.StrOpt("at", help="The told instant (RFC 3339), for a simulated cloud."),
]


def _token(conf: cfg.ConfigOpts) -> str | None:
    path = conf.sync.token_file
    if not path:
        return None
    try:
        return read_token_file(path)
    except TokenFileError as exc:
        raise ConfigError(f"[sync] token_file {exc}") from None


def _clouds(conf: cfg.ConfigOpts) -> list[str]:
    if conf.cloud:
        return list(conf.cloud)
    from reporting.sync.clouds import CloudsFileError, load_clouds_file

    try:
        clouds = list(load_clouds_file(conf.sync.clouds_file))
    except CloudsFileError as exc:
        raise ConfigError(str(exc)) from None
    if not clouds:
        raise ConfigError("no cloud to sync: name one or set [sync] clouds_file")
    return clouds


def _describe(cloud: str, response: requests.Response) -> tuple[bool, str]:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code == 200:
        stats = body.get("stats", {})
        return True, (f"{cloud}: run {body.get('id')} completed: created {stats.get('created')}, "
                      f"updated {stats.get('updated')}, deleted {stats.get('deleted')}, "
                      f"deferred {stats.get('deferred')}")
    if response.status_code == 500 and "run_id" in body:
        return False, (f"{cloud}: run {body['run_id']} failed; its reasons are in "
                       "GET /v1/sync-runs")
    message = body.get("error", {}).get("message") if isinstance(body, dict) else None
    return False, f"{cloud}: HTTP {response.status_code}: {message or response.reason}"


def run(conf: cfg.ConfigOpts) -> int:
    from reporting.sync.options import SyncConfigError, apply_env_aliases

    try:
        apply_env_aliases(conf, os.environ)
    except SyncConfigError as exc:
        raise ConfigError(str(exc)) from None
    at = None
    if conf.at:
        try:
            at = format_timestamp(parse_timestamp(conf.at))
        except TimestampError as exc:
            raise ConfigError(f"--at: {exc}") from None
    headers = {}
    token = _token(conf)
    if token:
        headers["Authorization"] = f"Bearer {token}"
    timeout = float(conf.sync.budget_s) + RESPONSE_MARGIN_S
    failed = 0
    for cloud in _clouds(conf):
        url = f"{conf.sync.api_url.rstrip('/')}/internal/sync/{quote(cloud, safe='')}"
        try:
            response = requests.post(url, params={"at": at} if at else None,
                                     headers=headers, timeout=timeout)
        except requests.RequestException as exc:
            print(f"{cloud}: the Reporting API did not answer: {one_line(exc)}")
            failed += 1
            continue
        ok, line = _describe(cloud, response)
        print(line)
        failed += not ok
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        conf = load_conf(argv, prog=PROG, cli_opts=cli_opts)
        return run(conf)
    except ConfigError as exc:
        print(f"{PROG}: configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
