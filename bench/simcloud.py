"""Benchmark: tally-simcloud generation time and listing throughput at 100k live resources.

In one run:

1. generation: the world at ``--baseline-scale`` (baseline) and at ``--scale``; the
   ratio of the times against the ratio of the scales says whether generation stays
   linear;
2. listing: every live resource of the five types listed through keystoneauth the
   way the reconciliation adapter lists them (admin, all projects, page size 1000,
   following markers), in resources/s; the baseline is the request rate of the same
   keystoneauth session against nova's version document on the same server, and
   the ratio ``listing rate / (baseline request rate x page size)`` says how close a
   listing page comes to the cost of the cheapest authenticated request.

The listing rate is the floor of the reconciliation benchmark: a sync cannot observe
the cloud faster than the cloud answers.  Usage, from the checkout:

    python bench/simcloud.py [--scale 100000] [--baseline-scale 10000] [--rounds 1]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import openstack.config  # noqa: E402
import requests  # noqa: E402
import yaml  # noqa: E402
from keystoneauth1.adapter import Adapter  # noqa: E402

from simcloud.config import WorldConfig  # noqa: E402
from simcloud.world import World  # noqa: E402

PAGE = 1000
LISTINGS = [
    ("compute", "servers/detail", "servers", {"all_tenants": 1}, "2.47"),
    ("block-storage", "volumes/detail", "volumes", {"all_tenants": 1}, "3.0"),
    ("network", "v2.0/floatingips", "floatingips", {}, None),
    ("image", "v2/images", "images", {}, None),
    ("image", "v2/images", "images", {"os_hidden": "true"}, None),
    ("load-balancer", "v2/lbaas/loadbalancers", "loadbalancers", {}, None),
]


def _adapter(clouds: Path, service_type: str) -> Adapter:
    region = openstack.config.OpenStackConfig(config_files=[str(clouds)]).get_one("sim-admin")
    return Adapter(region.get_session(), service_type=service_type, interface="public",
                   region_name="RegionOne")


def _list_all(adapter: Adapter, path: str, key: str, params: dict[str, Any],
              microversion: str | None) -> int:
    count = 0
    query = dict(params, limit=PAGE)
    while True:
        body = adapter.get(path, params=query, microversion=microversion).json()
        page = body[key]
        count += len(page)
        if len(page) < PAGE:
            return count
        query = dict(params, limit=PAGE, marker=page[-1]["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=100_000)
    parser.add_argument("--baseline-scale", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    began = time.perf_counter()
    World(WorldConfig(seed=args.seed, scale=args.baseline_scale))
    base_gen = time.perf_counter() - began
    began = time.perf_counter()
    world = World(WorldConfig(seed=args.seed, scale=args.scale))
    gen = time.perf_counter() - began
    live = sum(1 for r in world.resources if r.exists_at(world.now))
    print(f"generation: scale {args.baseline_scale}: {base_gen:.2f}s (baseline); "
          f"scale {args.scale}: {gen:.2f}s, {len(world.resources)} resources over the month, "
          f"{live} live at the clock")
    print(f"generation ratio {gen / base_gen:.2f} for a scale ratio "
          f"{args.scale / args.baseline_scale:.2f} (linear: equal)")

    del world  # the served world is generated again, in its own process
    with tempfile.TemporaryDirectory() as tmp:
        clouds = Path(tmp) / "clouds.yaml"
        server = _serve(args.seed, args.scale, clouds)
        try:
            nova = _adapter(clouds, "compute")
            nova.get("/", microversion=None)  # authenticate once, outside the timing
            requests_n = 300
            began = time.perf_counter()
            for _ in range(requests_n):
                nova.get("/")
            request_rate = requests_n / (time.perf_counter() - began)
            print(f"baseline: {request_rate:.0f} authenticated requests/s "
                  f"(keystoneauth, nova version document)")
            for round_no in range(args.rounds):
                total = 0
                began = time.perf_counter()
                for service_type, path, key, params, microversion in LISTINGS:
                    adapter = _adapter(clouds, service_type)
                    adapter.get_endpoint()
                    t0 = time.perf_counter()
                    n = _list_all(adapter, path, key, params, microversion)
                    dt = time.perf_counter() - t0
                    total += n
                    print(f"  {service_type:14s} {path:24s} {n:7d} in {dt:6.2f}s "
                          f"= {n / dt:8.0f} resources/s")
                elapsed = time.perf_counter() - began
                rate = total / elapsed
                print(f"round {round_no + 1}: listed {total} resources (truth: {live}) in "
                      f"{elapsed:.2f}s = {rate:.0f} resources/s; ratio to the baseline "
                      f"ceiling {rate / (request_rate * PAGE):.3f}")
                if total != live:
                    print("MISMATCH: the listings do not cover the live truth", file=sys.stderr)
                    return 1
        finally:
            server.terminate()
            server.wait(timeout=30)
    return 0


def _serve(seed: int, scale: int, clouds: Path) -> subprocess.Popen[bytes]:
    """``tally-simcloud serve`` in its own process: the client must not share its GIL."""
    process = subprocess.Popen(
        [sys.executable, "-W", "ignore", "-m", "simcloud.cmd", "serve", "--seed", str(seed),
         "--scale", str(scale), "--bind", "127.0.0.1:0", "--write-clouds-yaml", str(clouds)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"tally-simcloud serve exited with {process.returncode}")
        if clouds.exists():
            url = yaml.safe_load(clouds.read_text())["clouds"]["sim-admin"]["auth"]["auth_url"]
            try:
                requests.get(url.rsplit("/identity", 1)[0] + "/_sim/clock", timeout=5)
                return process
            except requests.RequestException:
                pass
        time.sleep(0.2)
    process.terminate()
    raise SystemExit("tally-simcloud serve did not come up within 600 s")


if __name__ == "__main__":
    sys.exit(main())
