"""``tally-simcloud``: serve the simulated OpenStack world (docs/simcloud.md).

    tally-simcloud serve --seed N --scale N --bind HOST:PORT --write-clouds-yaml PATH
                         [--write-tally-clouds PATH --cloud NAME]
                         [--transport-url URL --exchange-prefix P --loss P --duplicate P
                          --reorder]
                         [--tally-url URL --token-ttl S]
                         [--page-cap SERVICE=N ... --nova-max-microversion X.Y]
                         [--page-latency SERVICE=MS+MS_PER_ITEM ...]
    tally-simcloud drive --sim-url URL [--reporting-url URL --cloud NAME --token-file F]
                         [--step-s 600 --until T]
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from pathlib import Path

import requests
import yaml

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from simcloud import driver
from simcloud.config import API_SERVICE_TYPES, STOCK_EXCHANGES, ConfigError, WorldConfig
from simcloud.listening import ListenError, format_bind, listen
from tally_common.library_notices import quiet_library_notices
from tally_common.logs import command_line_logging

LOG = logging.getLogger("simcloud")


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} is not within [0, 1]")
    return value


def _bind(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not HOST:PORT")
    return host.strip("[]"), int(port)


def _page_cap(text: str) -> tuple[str, int]:
    service, sep, number = text.partition("=")
    if not sep or not number.strip().isdigit() or int(number) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not SERVICE=N (N >= 1)")
    return service.strip(), int(number)


def _page_latency(text: str) -> tuple[str, tuple[float, float]]:
    """``SERVICE=MS+MS_PER_ITEM``: what a page costs, in milliseconds."""
    service, sep, cost = text.partition("=")
    per_page, plus, per_item = cost.partition("+")
    try:
        figures = (float(per_page) / 1000, float(per_item) / 1000 if plus else 0.0)
    except ValueError:
        figures = (-1.0, -1.0)
    if not sep or not service.strip() or min(figures) < 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not SERVICE=MS+MS_PER_ITEM (e.g. compute=40+0.8)")
    return service.strip(), figures


def _instant(text: str) -> dt.datetime:
    try:
        return parse_timestamp(text)
    except TimestampError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tally-simcloud", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="generate the world and serve its APIs")
    serve.add_argument("--seed", type=int, default=1)
    serve.add_argument("--scale", type=int, default=100,
                       help="live resources at a time, over the five types (default 100)")
    serve.add_argument("--start", type=_instant, default=WorldConfig.start,
                       help="first instant of the simulated month (RFC 3339)")
    serve.add_argument("--days", type=int, default=30)
    serve.add_argument("--empty-start", action="store_true",
                       help="start with an empty cloud populated during the first day")
    serve.add_argument("--bind", type=_bind, default=("127.0.0.1", 0),
                       help="HOST:PORT to listen on (port 0: a free one)")
    serve.add_argument("--write-clouds-yaml", metavar="PATH",
                       help="write OpenStack's clouds.yaml (entries sim-admin, sim-member, "
                       "sim-admin-readonly and sim-tally-service) here: what "
                       "OS_CLIENT_CONFIG_FILE names")
    serve.add_argument("--tally-url", metavar="URL",
                       help="list this Reporting API in keystone's catalog "
                       "(service type usage-history)")
    serve.add_argument("--token-ttl", type=float, default=3600.0, metavar="S",
                       help="seconds a keystone token lives (default 3600)")
    serve.add_argument("--write-tally-clouds", metavar="PATH",
                       help="write Tally's clouds file ([sync] clouds_file, e.g. "
                       "tally-clouds.yaml) here: cloud --cloud on entry sim-admin, marked "
                       "clock: simulated (every sync must be told --at)")
    serve.add_argument("--cloud", default="sim",
                       help="the cloud's name in Tally, for --write-tally-clouds (default sim)")
    serve.add_argument("--transport-url", help="oslo.messaging URL to publish notifications to")
    serve.add_argument("--exchange-prefix", default="", metavar="P",
                       help="publish on exchanges P+nova, P+cinder, ... instead of the stock "
                       "ones every consumer of a shared broker reads (better still: a "
                       "vhost of its own in --transport-url)")
    serve.add_argument("--loss", type=_probability, default=0.0)
    serve.add_argument("--duplicate", type=_probability, default=0.0)
    serve.add_argument("--reorder", action="store_true")
    serve.add_argument("--hidden-images", type=_probability, default=0.05,
                       help="fraction of images created with os_hidden=true")
    serve.add_argument("--ownerless-images", type=_probability, default=0.0,
                       help="fraction of images created without an owner")
    serve.add_argument("--page-cap", type=_page_cap, action="append", default=[],
                       metavar="SERVICE=N",
                       help="the most items SERVICE (compute, block-storage, network, image, "
                       "load-balancer) answers on a page, whatever limit is asked for, "
                       "linking the capped page as the real service does (nova max_limit, "
                       "cinder osapi_max_limit, glance api_limit_max, neutron and octavia "
                       "pagination_max_limit); repeat per service")
    serve.add_argument("--page-latency", type=_page_latency, action="append", default=[],
                       metavar="SERVICE=MS+MS_PER_ITEM",
                       help="what a page of SERVICE's listing costs: MS per page plus "
                       "MS_PER_ITEM per item on it (docs/simcloud.md, 'Page latency'); "
                       "repeat per service; unset, nothing is added")
    serve.add_argument("--nova-max-microversion", default=WorldConfig.nova_max_microversion,
                       metavar="X.Y",
                       help="nova's highest microversion (default 2.104; e.g. 2.38 for a "
                       "nova without embedded flavors or down-cell records)")
    serve.add_argument("--without-service", action="append", default=[], metavar="TYPE",
                       dest="without_services",
                       help="a service the cloud does not run (catalog type, e.g. "
                       "block-storage; repeatable): left out of the catalog, its URLs 404")
    serve.add_argument("--debug", action="store_true")

    drive = sub.add_parser("drive", help="step a served world's clock, syncing after each step")
    drive.add_argument("--sim-url", required=True, help="base URL of tally-simcloud serve")
    drive.add_argument("--reporting-url", help="Reporting API to trigger syncs on")
    drive.add_argument("--cloud", help="the cloud's name in Tally (with --reporting-url)")
    drive.add_argument("--token-file", help="file holding an admin bearer token of the API")
    drive.add_argument("--step-s", type=float, default=600.0,
                       help="virtual seconds per step (default 600: a sync every 10 minutes)")
    drive.add_argument("--until", type=_instant, help="stop here (default: the month's end)")
    drive.add_argument("--debug", action="store_true")
    return parser


def main(argv: list[str] | None = None) -> int:
    # oslo.messaging imports eventlet, whose import warns on every start.
    quiet_library_notices()
    args = build_parser().parse_args(argv)
    command_line_logging("tally-simcloud", debug=args.debug)
    if args.command == "drive":
        return _drive(args)
    return _serve(args)


def _drive(args: argparse.Namespace) -> int:
    if args.reporting_url and not args.cloud:
        print("tally-simcloud drive: --reporting-url needs --cloud", file=sys.stderr)
        return 2
    token = None
    if args.token_file:
        from tally_common.token_file import TokenFileError, read_token_file

        try:
            token = read_token_file(args.token_file)  # the first line, as every client
        except TokenFileError as exc:
            print(f"tally-simcloud drive: --token-file {exc}", file=sys.stderr)
            return 2
    clock = driver.HttpClock(args.sim_url)
    try:
        document = requests.get(args.sim_url.rstrip("/") + "/_sim/clock", timeout=60).json()
        until = args.until or parse_timestamp(document["end"])
        LOG.info("simulated cloud: %s (clock at %s); driving it to %s in steps of %gs",
                 args.sim_url, document["at"], format_timestamp(until), args.step_s)
        if args.reporting_url:
            LOG.info("Reporting API: %s (syncing cloud %s after each step)",
                     args.reporting_url, args.cloud)
        else:
            LOG.info("Reporting API: none (no --reporting-url: the clock only, no syncs)")
        sync = driver.http_sync(args.reporting_url, args.cloud, token) \
            if args.reporting_url else None
        failed = 0
        for step in driver.drive(clock, sync, until=until,
                                 step=dt.timedelta(seconds=args.step_s)):
            status = step.sync.status if step.sync is not None else "-"
            failed += step.sync is not None and step.sync.status != 200
            LOG.info("clock %s: %s notifications sent; sync %s", format_timestamp(step.at),
                     step.moved.get("sent"), status)
    except (requests.RequestException, ValueError, KeyError) as exc:
        print(f"tally-simcloud drive: {exc}", file=sys.stderr)
        return 1
    return 1 if failed else 0


def write_tally_clouds(path: str, cloud: str, base_url: str,
                       absent_services: frozenset[str] = frozenset()) -> Path:
    """Tally's clouds file for this simulated cloud (adapter entry sim-admin), naming
    its clock so a sync told an instant the month has not reached is refused, and
    the services it runs."""
    services = [s for s in API_SERVICE_TYPES if s not in absent_services]
    document = {"clouds": [{
        "name": cloud, "platform": "openstack", "adapter": "openstack", "clock": "simulated",
        "clock_url": base_url.rstrip("/") + "/_sim/clock",
        "adapter_config": {"os_cloud": "sim-admin", "services": services}}]}
    target = Path(path)
    target.write_text("# Tally's clouds file ([sync] clouds_file), written by tally-simcloud.\n"
                      "# clock: simulated - every sync of this cloud must be told its instant\n"
                      "# (tally-sync --at T, T from GET /_sim/clock), never one after the\n"
                      "# clock at clock_url (refused).\n"
                      + yaml.safe_dump(document, sort_keys=False))
    return target


def world_config(args: argparse.Namespace) -> WorldConfig:
    """The world ``serve`` runs; ConfigError for values it cannot use."""
    prefix = args.exchange_prefix
    return WorldConfig(seed=args.seed, scale=args.scale, start=args.start, days=args.days,
                       empty_start=args.empty_start, loss=args.loss,
                       duplicate=args.duplicate, reorder=args.reorder,
                       transport_url=args.transport_url,
                       exchanges={s: prefix + s for s in STOCK_EXCHANGES} if prefix else {},
                       hidden_image_fraction=args.hidden_images,
                       ownerless_image_fraction=args.ownerless_images,
                       page_caps=dict(args.page_cap),
                       page_latencies=dict(args.page_latency),
                       nova_max_microversion=args.nova_max_microversion,
                       absent_services=frozenset(args.without_services))


def _serve(args: argparse.Namespace) -> int:
    prefix = args.exchange_prefix
    try:
        config = world_config(args)
    except ConfigError as exc:
        print(f"tally-simcloud: {exc}", file=sys.stderr)
        return 2
    host, port = args.bind
    try:
        sock = listen(host, port)  # first: an address in use costs no world
    except ListenError as exc:
        print(f"tally-simcloud: --bind {format_bind(host, port)!r}: {exc}", file=sys.stderr)
        return 2
    from simcloud.server import SimCloudServer  # imports oslo.messaging
    try:
        server = SimCloudServer(config, host=host, port=port, tally_url=args.tally_url,
                                sock=sock)
        server.identity.token_ttl = dt.timedelta(seconds=args.token_ttl)
        server.bind()
    except Exception as exc:  # a transport URL oslo refuses, ...
        sock.close()
        print(f"tally-simcloud: cannot build the world: {exc}", file=sys.stderr)
        return 1
    if args.write_clouds_yaml:
        path = server.write_clouds_yaml(args.write_clouds_yaml)
        LOG.info("wrote OpenStack's clouds.yaml %s (entries sim-admin, sim-member, "
                 "sim-admin-readonly, sim-tally-service)", path)
    if args.write_tally_clouds:
        path = write_tally_clouds(args.write_tally_clouds, args.cloud, server.base_url,
                                  config.absent_services)
        LOG.info("wrote Tally's clouds file %s (cloud %s, clock: simulated)", path, args.cloud)
    LOG.info("broker: %s; exchanges %s", _redact(args.transport_url) or "(none: nothing published)",
             ",".join(prefix + s for s in STOCK_EXCHANGES))
    LOG.info("serving %s; clock at %s", server.base_url, server.world.clock_document()["at"])
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def _redact(url: str | None) -> str | None:
    if not url:
        return None
    from tally_common.config_check import redact_url

    return redact_url(url)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
