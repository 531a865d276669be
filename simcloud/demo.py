"""``tally-demo``: the whole of Tally on one machine, in one process.

A simulated cloud publishes a day of notifications (some lost, some duplicated,
reordered), the collector buffers and delivers them to the Reporting API, a sync
every ten virtual minutes closes the gaps, and a summary compares Tally's history
with the simulated cloud's ground truth.

Embedded defaults need nothing but this package: SQLite in ``--workdir`` and
oslo.messaging's in-process ``fake://`` transport.  ``--transport-url`` and
``--database-connection`` switch to a real RabbitMQ and PostgreSQL.
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import os
import secrets
import shutil
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests
import yaml
from oslo_config import cfg
from werkzeug.serving import make_server

from mapping.event import format_timestamp
from simcloud.config import STOCK_EXCHANGES
from simcloud.demo_handoff import ACCOUNTS_BY_DOMAIN, HandOff, InvoicingReceiver
from tally_common.library_notices import quiet_library_notices
from tally_common.logs import command_line_logging

LOG = logging.getLogger("tally-demo")

QUIET_TIMEOUT_S = 120.0
# A run's settle window ([sync] settle_s, left at its default here).
SETTLE = dt.timedelta(seconds=60)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="tally-demo",
        description="Simulated cloud -> collector -> Reporting API -> sync -> summary.")
    parser.add_argument("--workdir", default="demo-run",
                        help="directory for the database, buffer and generated files "
                        "(recreated on every run; default ./demo-run)")
    parser.add_argument("--transport-url", default=None,
                        help="oslo.messaging transport, e.g. rabbit://guest:guest@127.0.0.1:5672/ "
                        "(default: the in-process fake:// transport)")
    parser.add_argument("--database-connection", default=None,
                        help="SQLAlchemy URL of an EMPTY database "
                        "(default: SQLite in the workdir)")
    parser.add_argument("--cloud", default="sim", help="the cloud's name in Tally")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", type=int, default=40, help="live resources (default 40)")
    parser.add_argument("--hours", type=float, default=24.0, help="virtual hours to run")
    parser.add_argument("--sync-every-min", type=float, default=10.0)
    parser.add_argument("--loss", type=float, default=0.10)
    parser.add_argument("--duplicate", type=float, default=0.02)
    parser.add_argument("--turnover", type=float, default=0.5,
                        help="fraction of the population created and deleted per day")
    parser.add_argument("--operations", type=float, default=3.0,
                        help="operations (resize, power off, ...) per resource per day")
    parser.add_argument("--verbose", action="store_true")
    return parser.parse_args(argv)


class _Quiet(Exception):
    pass


class Demo:
    """Wires the four parts together; each method is one step of the story."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.workdir = Path(args.workdir).resolve()
        self.admin_token = secrets.token_urlsafe(24)
        self.ingest_token = secrets.token_urlsafe(24)
        self.api_url = ""
        self.sim: Any = None
        self.collector: Any = None
        self._http: Any = None
        self._transport: Any = None
        self._app: Any = None
        self.syncs: list[dict[str, Any]] = []
        self.webhook_secret = secrets.token_urlsafe(24)
        self.receiver: Any = None  # the invoicing system the close's webhook reaches
        self.notes: dict[str, int] = {"generated": 0, "lost": 0, "duplicated": 0, "sent": 0}

    # --- set-up -------------------------------------------------------------------
    def prepare_workdir(self) -> None:
        if self.workdir.exists():
            shutil.rmtree(self.workdir)
        (self.workdir / "buffer").mkdir(parents=True)
        tokens = {self.admin_token: "admin", self.ingest_token: "ingest"}
        (self.workdir / "tokens.yaml").write_text(yaml.safe_dump(tokens))
        (self.workdir / "ingest.token").write_text(self.ingest_token + "\n")
        clouds_file = {"clouds": [{
            "name": self.args.cloud, "platform": "openstack", "adapter": "openstack",
            # Every project joins its keystone domain's billing account (the hand-off
            # bills one of them: simcloud.demo_handoff).
            "adapter_config": {"os_cloud": "sim-admin", "include_octavia": True,
                               "accounts_by_domain": ACCOUNTS_BY_DOMAIN}}]}
        (self.workdir / "tally-clouds.yaml").write_text(yaml.safe_dump(clouds_file))
        # The OpenStack adapter reads clouds.yaml from the ecosystem's search path;
        # pointing OS_CLIENT_CONFIG_FILE at ours makes it the only file searched.
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(self.workdir / "clouds.yaml")

    def database_url(self) -> str:
        return self.args.database_connection or f"sqlite:///{self.workdir / 'tally.sqlite'}"

    def start_reporting(self) -> None:
        from reporting import opts as reporting_opts
        from reporting.app import create_app
        from reporting.db import migrations

        conf = cfg.ConfigOpts()
        reporting_opts.register_opts(conf)
        conf([], project="tally", prog="tally-demo", default_config_files=[])
        conf.set_override("connection", self.database_url(), group="database")
        conf.set_override("auth_strategy", "token", group="api")
        conf.set_override("tokens_file", str(self.workdir / "tokens.yaml"), group="api")
        conf.set_override("clouds_file", str(self.workdir / "tally-clouds.yaml"), group="sync")
        # The month's close posts its signed notice to a local invoicing receiver.
        self.receiver = InvoicingReceiver(self.webhook_secret)
        conf.set_override("webhook_url", self.receiver.url, group="handoff")
        conf.set_override("webhook_secret", self.webhook_secret, group="handoff")
        conf.set_override("poll_interval_s", 0.5, group="handoff")
        migrations.upgrade(conf)
        app = create_app(conf)
        self._app = app
        self._refuse_used_database(app)
        self._http = make_server("127.0.0.1", 0, app, threaded=True)
        threading.Thread(target=self._http.serve_forever, name="reporting-http",
                         daemon=True).start()
        self.api_url = f"http://127.0.0.1:{self._http.server_address[1]}"

    def _refuse_used_database(self, app: Any) -> None:
        import sqlalchemy as sa

        from reporting.db.models import Event
        from reporting.db.session import app_sessionmaker

        with app.app_context(), app_sessionmaker()() as session:
            held = session.scalar(sa.select(sa.func.count()).select_from(Event)
                                  .where(Event.cloud == self.args.cloud))
        if held:
            raise SystemExit(f"tally-demo: the database already holds {held} events of cloud "
                             f"{self.args.cloud!r}; give an empty database or another --cloud")

    def start_transport(self) -> None:
        if self.args.transport_url is None:
            import oslo_messaging

            tconf = cfg.ConfigOpts()
            tconf([], default_config_files=[])
            self._transport = oslo_messaging.get_notification_transport(tconf, url="fake:")

    def start_collector(self) -> None:
        from collector import opts as collector_opts
        from collector.service import Collector

        conf = cfg.ConfigOpts()
        collector_opts.register_opts(conf)
        files = []
        if self.args.transport_url:
            # transport_url is oslo.messaging's own option, registered when the
            # transport is built: give it the way an operator would, in a file.
            path = self.workdir / "collector.conf"
            path.write_text(f"[DEFAULT]\ntransport_url = {self.args.transport_url}\n"
                            f"[collector]\npool = tally-demo-{self.args.cloud}\n"
                            f"exchanges = {','.join(self.exchanges().values())}\n")
            files = [str(path)]
        conf([], project="tally", prog="tally-demo", default_config_files=files)
        overrides = {"cloud": self.args.cloud, "buffer_dir": str(self.workdir / "buffer"),
                     "reporting_url": self.api_url,
                     "token_file": str(self.workdir / "ingest.token"),
                     "idle_poll_s": 0.05, "retry_initial_delay_s": 0.05,
                     # the demo reads the metrics in-process; no port to collide on
                     "metrics_bind": ""}
        for name, value in overrides.items():
            conf.set_override(name, value, group="collector")
        self.collector = Collector(conf, transport=self._transport)
        self.collector.start()

    def exchanges(self) -> dict[str, str]:
        """On a real broker the cloud publishes on exchanges of its own (as services
        with their own control_exchange would) and the collector listens there: on the
        stock ones (nova, cinder...) a demo would feed every other collector on the
        broker, a deployment's or another demo's, and take theirs. None in-process."""
        if self.args.transport_url is None:
            return {}
        return {service: self._exchange_prefix() + service for service in STOCK_EXCHANGES}

    def _exchange_prefix(self) -> str:
        return f"tally-demo-{self.args.cloud}-"

    def start_simcloud(self) -> None:
        from simcloud.config import WorldConfig
        from simcloud.server import SimCloudServer

        config = WorldConfig(
            seed=self.args.seed, scale=self.args.scale,
            days=max(1, int(-(-self.args.hours // 24))),
            daily_turnover=self.args.turnover, daily_operations=self.args.operations,
            loss=self.args.loss, duplicate=self.args.duplicate, reorder=True,
            transport=self._transport, transport_url=self.args.transport_url,
            exchanges=self.exchanges())
        self.sim = SimCloudServer(config)
        self.sim.start()
        self.sim.write_clouds_yaml(self.workdir / "clouds.yaml")

    # --- the run ------------------------------------------------------------------
    def _consumed(self) -> float:
        total = 0.0
        for family in self.collector.metrics.registry.collect():
            if family.name in ("tally_collector_skipped", "tally_collector_mapped"):
                total += sum(s.value for s in family.samples if s.name.endswith("_total"))
        return total

    def wait_delivered(self, expected: float) -> None:
        """Until the collector consumed ``expected`` notifications and emptied its buffer."""
        deadline = time.monotonic() + QUIET_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._consumed() >= expected and self.collector.buffer.depth() == 0:
                return
            time.sleep(0.02)
        raise _Quiet(f"the collector did not drain within {QUIET_TIMEOUT_S:.0f}s")

    def sync(self, at: dt.datetime) -> dict[str, Any]:
        response = requests.post(
            f"{self.api_url}/internal/sync/{self.args.cloud}",
            params={"at": format_timestamp(at)},
            headers={"Authorization": f"Bearer {self.admin_token}"}, timeout=120)
        body: dict[str, Any] = response.json() if response.content else {}
        body["http_status"] = response.status_code
        self.syncs.append(body)
        return body

    def run(self) -> None:
        world = self.sim.world
        start = world.clock
        end = start + dt.timedelta(hours=self.args.hours)
        step = dt.timedelta(minutes=self.args.sync_every_min)
        expected = self._consumed()
        moment = start
        while moment < end:
            moment = min(moment + step, end)
            report = world.advance_to(moment)
            for key in self.notes:
                self.notes[key] += int(report.get(key, 0))
            expected += report.get("sent", 0)
            self.wait_delivered(expected)
            self.sync(moment)
        # Two last runs past the settle window: the first books what the last
        # interval left, the second must find nothing to correct.
        self.sync(end + dt.timedelta(minutes=2))
        self.sync(end + dt.timedelta(minutes=3))
        self.end = end

    # --- the summary --------------------------------------------------------------
    def _get(self, path: str, **params: Any) -> Any:
        response = requests.get(f"{self.api_url}{path}", params=params, timeout=60,
                                headers={"Authorization": f"Bearer {self.admin_token}"})
        response.raise_for_status()
        return response.json()

    def _rows(self) -> Iterator[dict[str, Any]]:
        marker = None
        while True:
            params: dict[str, Any] = {"cloud": self.args.cloud, "limit": 1000}
            if marker:
                params["marker"] = marker
            page = self._get("/v1/resources", **params)
            yield from page["items"]
            marker = page["next_marker"]
            if not marker:
                return

    def compare(self) -> tuple[dict[str, list[int]], list[str], list[str]]:
        """(per type: live in Tally, live in truth, rows that differ; the differences;
        the resources still in transition at the end, which are not compared)."""
        truth = {(r["resource_type"], r["resource_id"]): r
                 for r in self.sim.world.truth(at=self.end)}
        rows = {(r["resource_type"], r["resource_id"]): r for r in self._rows()}
        per_type: dict[str, list[int]] = {}
        problems: list[str] = []
        unsettled: list[str] = []
        for key in sorted(set(truth) | set(rows)):
            want, have = truth.get(key), rows.get(key)
            counts = per_type.setdefault(key[0], [0, 0, 0])
            counts[0] += bool(have and have["live"])
            counts[1] += bool(want and want["live"])
            if want is not None and want.get("in_transition"):
                # A run defers a resource in transition (docs/reconciliation.md) and its .end
                # notification comes after the run: no settled truth to compare yet.
                unsettled.append(f"{key[0]} {key[1]}: tally={_brief(have)} "
                                 f"truth={_brief(want)}")
                continue
            if want is None or not want["live"]:
                ok = have is None or not have["live"]
            else:
                ok = bool(have and have["live"] and have["project_id"] == want["project_id"]
                          and have["state"] == want["state"] and have["size"] == want["size"])
            if not ok:
                counts[2] += 1
                problems.append(f"{key[0]} {key[1]}: tally={_brief(have)} truth={_brief(want)}")
        return per_type, problems, unsettled

    def summary(self) -> int:
        args = self.args
        print()
        print(f"Tally demo: cloud {args.cloud!r}, seed {args.seed}, scale {args.scale}, "
              f"{args.hours:g} virtual hours, sync every {args.sync_every_min:g} min")
        print(f"  transport {args.transport_url or 'fake:// (in-process)'}; "
              f"database {self.database_url()}")
        exchanges = self.exchanges()
        if exchanges:
            print(f"  exchanges {self._exchange_prefix()}{{{','.join(exchanges)}}}")
        n = self.notes
        print(f"  notifications: {n['generated']} published by the cloud, {n['lost']} lost, "
              f"{n['duplicated']} duplicated, {n['sent']} reached the bus")
        delivered = {s.labels["outcome"]: s.value
                     for f in self.collector.metrics.registry.collect()
                     if f.name == "tally_collector_delivered"
                     for s in f.samples if s.name.endswith("_total")}
        skipped = sum(s.value for f in self.collector.metrics.registry.collect()
                      if f.name == "tally_collector_skipped"
                      for s in f.samples if s.name.endswith("_total"))
        print(f"  collector: {int(skipped)} skipped (types Tally does not book: .start, "
              "resize.end, unsized image.create, ...); delivered to the API: "
              + ", ".join(f"{int(v)} {k}" for k, v in sorted(delivered.items())))
        failed = [s for s in self.syncs if s.get("http_status") != 200]
        booked = {"created": 0, "updated": 0, "deleted": 0}
        for run in self.syncs:
            stats = run.get("stats") or {}
            for action in booked:
                booked[action] += int(stats.get(action, 0))
        print(f"  syncs: {len(self.syncs)} runs ({len(failed)} failed); corrections booked: "
              + ", ".join(f"{v} {k}" for k, v in booked.items()))
        last = self.syncs[-1].get("stats") or {}
        print(f"  the last sync booked {sum(int(last.get(a, 0)) for a in booked)} corrections")
        per_type, problems, unsettled = self.compare()
        print()
        print(f"Inventory at {format_timestamp(self.end)}  (live in Tally / live in truth / "
              "rows that differ)")
        for resource_type, (have, want, bad) in sorted(per_type.items()):
            print(f"  {resource_type:<13} {have:>6} {want:>6} {bad:>6}")
        self._print_lifecycle()
        self._print_usage()
        billing_ok = self._bill() and self._hand_off()
        print()
        if unsettled:
            print(f"Not compared: {len(unsettled)} resources still in transition at the end "
                  "(a sync defers them until they settle):")
            for line in unsettled[:20]:
                print("  " + line)
        if problems:
            print(f"RESULT: {len(problems)} resources differ from the truth:")
            for line in problems[:20]:
                print("  " + line)
            return 1
        if not billing_ok:
            print("RESULT: Tally's statements differ from the amounts billed from the truth, "
                  "or the month's hand-off failed")
            return 1
        resources = sum(c[1] for c in per_type.values()) - len(unsettled)
        print(f"RESULT: Tally's projection equals the simulated cloud's truth "
              f"({resources} live resources, every type, project, state and size"
              + (f"; {len(unsettled)} in transition not compared" if unsettled else "") + ").")
        return 0

    def _print_lifecycle(self) -> None:
        best: tuple[int, dict[str, Any]] | None = None
        for row in self._rows():
            if row["resource_type"] != "instance":
                continue
            path = (f"/v1/resources/openstack/{self.args.cloud}/instance/"
                    f"{row['resource_id']}/lifecycle")
            intervals = self._get(path)["intervals"]
            if best is None or len(intervals) > best[0]:
                best = (len(intervals), {"row": row, "intervals": intervals})
        if best is None:
            return
        row, intervals = best[1]["row"], best[1]["intervals"]
        print()
        print(f"Lifecycle of instance {row['resource_id']} (project {row['project_id']}):")
        for interval in intervals:
            size = interval["size"] or {}
            print(f"  {interval['start']} -> {interval['end'] or 'now':<27} "
                  f"{interval['state'] or '-':<8} {size.get('flavor', '-'):<10} "
                  f"opened by {interval['event_id']}")

    def _print_usage(self) -> None:
        start = self.sim.world.config.start
        usage = self._get("/v1/usage", cloud=self.args.cloud, group_by="resource_type",
                          **{"from": format_timestamp(start), "to": format_timestamp(self.end)})
        print()
        print("Usage over the run (resource-hours by type):")
        for item in usage.get("items", []):
            seconds = sum(part.get("seconds", 0) for part in item.get("usage", [])) \
                if "usage" in item else item.get("seconds", 0)
            print(f"  {item.get('resource_type', '?'):<13} {seconds / 3600:>10.1f}")

    def _bill(self) -> bool:
        """Bill the simulated month through the API with the demo's price list (tiers,
        and terms of the hand-off's account: ``simcloud.billing_check.demo_prices``) and
        check it against the truth's bill (``simcloud.billing_check``, a rating written
        apart from Tally's, each project in its domain's account from the month's
        start): every resource's amount on Tally's statements equals the
        independent rating of Tally's own lifecycle; where that lifecycle is the
        truth's, it equals the truth's bill to the cent; elsewhere the two lifecycles
        disagree for at most two sync intervals plus the settle window at a stretch
        beyond the time the resource spent in transition (a run books what it sees,
        or the next run when it defers it as recent; a resource in transition waits),
        and the amounts by at most the price × those stretches (plus rounding)."""
        from reporting.billing import periods
        from reporting.clock import utcnow
        from simcloud.billing_check import check_month, demo_prices

        world = self.sim.world
        period = periods.containing(world.config.start.replace(tzinfo=None))
        period_start, period_end = periods.parse(period)
        # The truth's accounts: every project in its keystone domain's, from the month's
        # start (a sync's default membership, docs/statements.md "Billing accounts").
        accounts = {project.id: self._account_of(project.domain_id)
                    for project in (*world.projects, world.admin_project)}
        prices = demo_prices(self.term_account, period_start)
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        response = requests.put(f"{self.api_url}/v1/price-lists/{self.args.cloud}",
                                json=prices, headers=headers, timeout=60)
        response.raise_for_status()
        now = utcnow()
        tolerance = 2 * dt.timedelta(minutes=self.args.sync_every_min) + SETTLE
        check = check_month(self._get, self.args.cloud, world, period, period_start,
                            min(period_end, now), self.end.replace(tzinfo=None), tolerance,
                            prices, accounts)
        print()
        print(f"Statements of {period} with a demo price list (floating IPs and m1.small "
              f"tiered per project's month; account terms of {self.term_account}: its "
              "floating IPs at a rate of their own from 02:00 on the 1st to the 3rd, cheaper "
              f"instances from the 10th to the 20th): {check.describe()}")
        print(f"  every amount follows the rule (exact where the lifecycle is the truth's, "
              f"bounded elsewhere): {'yes' if not check.problems else 'NO'}")
        for line in check.problems[:10]:
            print("  " + line)
        return not check.problems

    def _account_of(self, domain_id: str) -> str:
        return ACCOUNTS_BY_DOMAIN.replace("{cloud}", self.args.cloud).replace(
            "{domain_id}", domain_id)

    @property
    def term_account(self) -> str:
        """The account the demo's price list gives terms and the hand-off bills: the
        keystone domain's of the world's first project."""
        return self._account_of(self.sim.world.projects[0].domain_id)

    def _hand_off(self) -> bool:
        """Close the month and hand it off (``simcloud.demo_handoff``): an account with
        a credit, the close, the signed webhook and the export."""
        from reporting.billing import periods
        from reporting.clock import utcnow

        period = periods.containing(self.sim.world.config.start.replace(tzinfo=None))
        period_start, period_end = periods.parse(period)
        return HandOff(self.api_url, self.admin_token, self.args.cloud, self.workdir,
                       self.receiver, self.term_account).run(period, period_start,
                                                            period_end, utcnow())

    def stop(self) -> None:
        for stopper in (getattr(self.collector, "stop", None), getattr(self.sim, "stop", None),
                        getattr(self._http, "shutdown", None),
                        getattr(self.receiver, "stop", None)):
            if stopper is not None:
                try:
                    stopper()
                except Exception:  # noqa: BLE001 - shutting down, report and go on
                    LOG.exception("while stopping")
        if self._transport is not None:
            self._transport.cleanup()
        if self._app is not None:
            # Closing the pool lets SQLite fold its write-ahead log into the database
            # file, so the file alone holds the run (it is the demo's product).
            from reporting.db.session import ENGINE_KEY

            self._app.extensions[ENGINE_KEY].dispose()


def _brief(row: dict[str, Any] | None) -> str:
    if row is None:
        return "absent"
    return (f"{'live' if row.get('live') else 'gone'}/{row.get('project_id')}/"
            f"{row.get('state')}/{row.get('size')}")


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    # oslo.messaging imports eventlet, whose import warns on every start.
    quiet_library_notices()
    # The summary is the demo's output (stdout); its log goes to stderr, errors only
    # unless --verbose.
    command_line_logging("tally-demo", debug=False, to_stderr=True)
    if not args.verbose:  # werkzeug logs every request at INFO unless told otherwise
        for name in ("", "werkzeug"):
            logging.getLogger(name).setLevel(logging.ERROR)
    demo = Demo(args)
    try:
        print(f"tally-demo: preparing {args.workdir} ...", flush=True)
        demo.prepare_workdir()
        demo.start_reporting()
        demo.start_transport()
        demo.start_collector()
        demo.start_simcloud()
        print(f"tally-demo: Reporting API on {demo.api_url}, simulated cloud on "
              f"{demo.sim.base_url}; running {args.hours:g} virtual hours ...", flush=True)
        demo.run()
        return demo.summary()
    except _Quiet as exc:
        print(f"tally-demo: {exc}", file=sys.stderr)
        return 1
    finally:
        demo.stop()


if __name__ == "__main__":
    sys.exit(main())
