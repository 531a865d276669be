"""Benchmark: one full sync of a 100,000-live-resource cloud vs merely listing it.

In one run, against one simulated cloud (``tally-simcloud``, in this process, on a
loopback port) and a fresh PostgreSQL database:

1. baseline: list the same resources through a keystoneauth session and adapters,
   doing nothing with them (servers, volumes, floating IPs, images with the hidden
   ones, load balancers; 1000 per page, following each service's markers);
2. the first sync of the cloud (it books every resource: a one-off);
3. a full steady-state sync (``POST /internal/sync/{cloud}``): authentication, the
   admin probe, every listing, nova's deleted servers, the volume types, the diff
   against a projection of the same size, the sightings and the bookkeeping.

It prints the times and the ratio sync / listing (target: <= 1.5; the run must also
stay far inside the 45 s budget).  Usage, from the checkout:

    python bench/sync.py [--scale 100000] [--rounds 3]

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


def _list_everything(clouds_yaml: Path) -> int:
    """Baseline: every listing a sync reads, through keystoneauth, items discarded."""
    import openstack.config
    from keystoneauth1.adapter import Adapter

    config = openstack.config.OpenStackConfig(config_files=[str(clouds_yaml)],
                                              load_envvars=False)
    region = config.get_one("sim-admin")
    session = region.get_session()

    def adapter(service_type: str) -> Adapter:
        return Adapter(session, service_type=service_type,
                       interface=region.get_interface(service_type),
                       region_name=region.get_region_name(service_type))

    def walk(client: Adapter, path: str, key: str, params: dict[str, Any],
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
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
    world = SimCloudServer(WorldConfig(seed=42, scale=args.scale))
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
        conf.set_override("budget_s", 600, group="sync")  # measured, not limited
        app = create_app(conf)
        client = app.test_client()
        at = world.world.clock + dt.timedelta(hours=1)
        world.world.advance_to(at)

        def sync(moment: dt.datetime) -> tuple[float, dict[str, Any]]:
            started = time.perf_counter()
            response = client.post(f"/internal/sync/bench?at={format_timestamp(moment)}")
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
        app.extensions[ENGINE_KEY].dispose()
    finally:
        world.stop()
        scratch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
