"""Benchmark: full and incremental syncs of a large cloud vs merely listing it.

In one run, against one simulated cloud (``tally-simcloud``, in this process, on a
loopback port) and a fresh PostgreSQL database:

1. baseline: list the same resources through a keystoneauth session and adapters,
   doing nothing with them (servers, volumes, floating IPs, images with the hidden
   ones, load balancers; 1000 per page, following each service's markers);
2. the first sync of the cloud (it books every resource: a one-off);
3. a full steady-state sync (``POST /internal/sync/{cloud}``): authentication, the
   admin probe, every listing, nova's deleted servers, the volume types, the diff
   against a projection of the same size, the sightings and the bookkeeping;
4. incremental (``[sync] full_listing_interval_s``): the clock moves on by an
   interval in which ``--churn`` of the cloud changes (creates, deletes, operations:
   the shape production gives it, changes spread over every type and project), then
   the baseline lists only the changes with the filters an incremental run sends
   (nova changes-since and its deleted listing, cinder created_at/updated_at at 3.60,
   neutron changed_since, glance updated_at, load balancers whole), and an
   incremental sync runs against a projection of the whole cloud.

``--page-latency SERVICE=MS+MS_PER_ITEM`` gives the simulated services what a page
costs a real one (docs/simcloud.md, "Page latency"), the baselines and the syncs
alike; unset, none.  The figures measured on real nova, cinder and glance by
bench/real_pages.py (their CPU per page; no figure for neutron or octavia) are the
ones to give for a run that should weigh as a real cloud's pages do:
``--page-latency compute=53.6+4.890 --page-latency block-storage=42.8+0.587
--page-latency image=24.3+0.397`` (nova's 4.9 ms a server alone adds 4.9 s to a full
listing per 1,000 servers: the 45 s budget below is the simulated cloud's own pages').
It prints the times and the ratios sync / listing (targets: full <= 1.5, incremental
<= 1.5 against listing the changes alone; the runs must also stay far inside the 45 s
budget).  Usage, from the checkout:

    python bench/sync.py [--scale 100000] [--rounds 3] [--churn 0.005]
                         [--page-latency compute=53.6+4.890 ...]

Needs the PostgreSQL named by TALLY_TEST_PG_URL (loopback default); creates and drops
its own database.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.scratch_database import scratch_database  # noqa: E402

DEFAULT_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"


class _Lister:
    """A keystoneauth session of the clouds.yaml entry ``sim-admin`` that walks a
    listing page after page (1000 a page, markers followed), items discarded."""

    def __init__(self, clouds_yaml: Path) -> None:
        import openstack.config

        config = openstack.config.OpenStackConfig(config_files=[str(clouds_yaml)],
                                                  load_envvars=False)
        self.region = config.get_one("sim-admin")
        self.session = self.region.get_session()

    def adapter(self, service_type: str) -> Any:
        from keystoneauth1.adapter import Adapter

        return Adapter(self.session, service_type=service_type,
                       interface=self.region.get_interface(service_type),
                       region_name=self.region.get_region_name(service_type))

    @staticmethod
    def walk(client: Any, path: str, key: str, params: dict[str, Any],
             headers: dict[str, str] | None = None) -> int:
        count, marker = 0, None
        while True:
            query = {**params, "limit": 1000, **({"marker": marker} if marker else {})}
            body = client.get(path, params=query, headers=headers).json()
            items = body[key]
            count += len(items)
            if len(items) < 1000:
                return count
            marker = items[-1]["id"]


def _list_everything(clouds_yaml: Path) -> int:
    """Baseline: every listing a sync reads, through keystoneauth, items discarded."""
    lister = _Lister(clouds_yaml)
    adapter, walk = lister.adapter, lister.walk

    nova = adapter("compute")
    total = walk(nova, "servers/detail", "servers", {"all_tenants": 1},
                 {"OpenStack-API-Version": "compute 2.69"})
    total += walk(adapter("block-storage"), "volumes/detail", "volumes", {"all_tenants": 1})
    total += walk(adapter("network"), "v2.0/floatingips", "floatingips", {})
    glance = adapter("image")
    total += walk(glance, "v2/images", "images", {"visibility": "all"})
    total += walk(glance, "v2/images", "images", {"visibility": "all", "os_hidden": "true"})
    total += walk(adapter("load-balancer"), "v2/lbaas/loadbalancers", "loadbalancers", {})
    return total


def _list_changes(clouds_yaml: Path, since: dt.datetime, deleted_since: dt.datetime) -> int:
    """Baseline of an incremental run: the same filtered listings, items discarded."""
    from mapping.event import format_timestamp

    lister = _Lister(clouds_yaml)
    adapter, walk = lister.adapter, lister.walk

    seconds = since.strftime("%Y-%m-%dT%H:%M:%SZ")
    nova = adapter("compute")
    v269 = {"OpenStack-API-Version": "compute 2.69"}
    total = walk(nova, "servers/detail", "servers",
                 {"all_tenants": 1, "changes-since": format_timestamp(since)}, v269)
    total += walk(nova, "servers/detail", "servers",
                  {"all_tenants": 1, "deleted": "true",
                   "changes-since": format_timestamp(deleted_since)}, v269)
    cinder = adapter("block-storage")
    v360 = {"OpenStack-API-Version": "volume 3.60"}
    for field in ("created_at", "updated_at"):
        total += walk(cinder, "volumes/detail", "volumes",
                      {"all_tenants": 1, field: f"gte:{seconds}"}, v360)
    total += walk(adapter("network"), "v2.0/floatingips", "floatingips",
                  {"changed_since": seconds})
    glance = adapter("image")
    for hidden in ({}, {"os_hidden": "true"}):
        total += walk(glance, "v2/images", "images",
                      {"visibility": "all", "updated_at": f"gte:{seconds}", **hidden})
    total += walk(adapter("load-balancer"), "v2/lbaas/loadbalancers", "loadbalancers", {})
    return total


def _page_latency(text: str) -> tuple[str, tuple[float, float]]:
    from simcloud import cmd

    return cmd._page_latency(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--churn", type=float, default=0.005,
                        help="fraction of the cloud changing per incremental interval")
    parser.add_argument("--page-latency", type=_page_latency, action="append", default=[],
                        metavar="SERVICE=MS+MS_PER_ITEM")
    args = parser.parse_args()

    import yaml
    from oslo_config import cfg

    from mapping.event import format_timestamp
    from reporting import opts
    from reporting.app import create_app
    from reporting.db import migrations
    from reporting.db.session import ENGINE_KEY
    from simcloud.config import WorldConfig
    from simcloud.server import SimCloudServer

    admin_url = os.environ.get("TALLY_TEST_PG_URL", DEFAULT_PG)
    scratch = contextlib.ExitStack()
    db_url = scratch.enter_context(scratch_database(admin_url, "tally_bench_sync"))
    workdir = Path(tempfile.mkdtemp(prefix="tally-bench-sync-"))
    began = time.perf_counter()
    config = WorldConfig(seed=42, scale=args.scale, page_latencies=dict(args.page_latency))
    world = SimCloudServer(config)
    world.start()
    print(f"world: {args.scale} live resources generated in "
          f"{time.perf_counter() - began:.1f} s")
    try:
        clouds_yaml = world.write_clouds_yaml(workdir / "clouds.yaml")
        os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds_yaml)
        clouds_file = workdir / "tally-clouds.yaml"
        clouds_file.write_text(yaml.safe_dump({"clouds": [{
            "name": "bench", "platform": "openstack", "adapter": "openstack",
            "adapter_config": {"os_cloud": "sim-admin", "include_octavia": True}}]}))
        migrations.upgrade(db_url)
        conf = cfg.ConfigOpts()
        opts.register_opts(conf)
        conf([], project="tally", default_config_files=[], default_config_dirs=[])
        conf.set_override("connection", db_url, group="database")
        conf.set_override("auth_strategy", "noauth", group="api")
        conf.set_override("clouds_file", str(clouds_file), group="sync")
        conf.set_override("budget_s", 7200, group="sync")  # measured, not limited (a first sync of 1M)
        app = create_app(conf)
        client = app.test_client()
        # The incremental runs': full ones far apart, a full one already done.
        incremental_conf = cfg.ConfigOpts()
        opts.register_opts(incremental_conf)
        incremental_conf([], project="tally", default_config_files=[], default_config_dirs=[])
        for group, name in (("database", "connection"), ("api", "auth_strategy"),
                            ("sync", "clouds_file"), ("sync", "budget_s")):
            incremental_conf.set_override(name, conf[group][name], group=group)
        incremental_conf.set_override("full_listing_interval_s", 10 * 365 * 86400.0,
                                      group="sync")
        incremental_app = create_app(incremental_conf)
        at = world.world.clock + dt.timedelta(hours=1)
        world.world.advance_to(at)

        def sync(moment: dt.datetime, via: Any = client) -> tuple[float, dict[str, Any]]:
            started = time.perf_counter()
            response = via.post(f"/internal/sync/bench?at={format_timestamp(moment)}")
            elapsed = time.perf_counter() - started
            assert response.status_code == 200, response.get_json()
            return elapsed, response.get_json()["stats"]

        first, stats = sync(at)
        print(f"first sync (books every resource): {first:.1f} s, created {stats['created']}, "
              f"deferred {stats['deferred']}")
        listings, syncs = [], []
        for round_no in range(args.rounds):
            started = time.perf_counter()
            listed = _list_everything(clouds_yaml)
            listings.append(time.perf_counter() - started)
            moment = at + dt.timedelta(seconds=10 * (round_no + 1))
            elapsed, stats = sync(moment)
            syncs.append(elapsed)
            print(f"round {round_no + 1}: listing {listed} resources {listings[-1]:.2f} s, "
                  f"full sync {elapsed:.2f} s (created {stats['created']}, "
                  f"updated {stats['updated']}, deleted {stats['deleted']})")
        listing, full = statistics.median(listings), statistics.median(syncs)
        print(f"median listing through keystoneauth: {listing:.2f} s")
        print(f"median full sync:                    {full:.2f} s (budget 45 s)")
        print(f"ratio sync / listing: {full / listing:.2f} (target <= 1.5)")

        # Incremental: an interval in which --churn of the cloud changes.
        rate = 2 * config.daily_turnover + config.daily_operations  # changes/resource/day
        interval = dt.timedelta(days=args.churn / rate)
        settle = dt.timedelta(seconds=float(conf.sync.settle_s))
        incremental_client = incremental_app.test_client()
        # Not counted: the incremental app's run process starts (and logs in) once, as
        # the service's does; the rounds below measure steady-state runs.
        last = moment + interval
        world.world.advance_to(last)
        sync(last, incremental_client)
        change_listings, incrementals = [], []
        for round_no in range(args.rounds):
            now = last + interval
            world.world.advance_to(now)
            changed = sum(1 for r in world.world.truth(now)
                          if r["updated_at"] > format_timestamp(last)
                          or (r["deleted_at"] or "") > format_timestamp(last))
            started = time.perf_counter()
            listed = _list_changes(clouds_yaml, last - settle, last - settle)
            change_listings.append(time.perf_counter() - started)
            elapsed, stats = sync(now, incremental_client)
            assert stats["kind"] == "incremental", stats
            incrementals.append(elapsed)
            print(f"incremental round {round_no + 1}: {interval.total_seconds() / 60:.0f} "
                  f"virtual min, {changed} of {args.scale} resources changed "
                  f"({changed / args.scale:.2%}); listing the changes ({listed} items) "
                  f"{change_listings[-1]:.2f} s, incremental sync {elapsed:.2f} s "
                  f"(created {stats['created']}, updated {stats['updated']}, "
                  f"deleted {stats['deleted']}, deferred {stats['deferred']})")
            last = now
        changes, incremental = statistics.median(change_listings), statistics.median(incrementals)
        print(f"median listing of the changes:       {changes:.2f} s")
        print(f"median incremental sync:             {incremental:.2f} s")
        print(f"ratio incremental sync / listing the changes: {incremental / changes:.2f} "
              "(target <= 1.5)")
        print(f"incremental sync / full listing:     {incremental / listing:.3f}")
        app.extensions[ENGINE_KEY].dispose()
        incremental_app.extensions[ENGINE_KEY].dispose()
    finally:
        world.stop()
        scratch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
