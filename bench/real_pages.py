"""Measure what a page of a listing costs real nova, cinder and glance; fit the
simulated cloud's page-latency model to it.

Each real service runs as the real-services tier runs it (tests/real: the drivers
tests/real/nova_driver.py, cinder_driver.py and glance_driver.py, in the per-service
virtualenvs that tier builds under ``~/.cache/tally-tests``; this bench never builds
them: run ``pytest tests/real`` once first), one service at a time, behind the
simulated cloud's keystone (in this process, for the tokens).  The driver's
``populate`` command writes ``--count`` resources straight into the service's own
database through the service's own code (nova: ``objects.Instance.create`` in cell1
with its instance mapping, as nova's functional InstanceListTestCase does; cinder:
``objects.Volume.create``; glance: its DB API's ``image_create``, each image active
with a file location) rather than ``--count`` boots or uploads: the listing then reads
what the service wrote.  The listing itself is the service's API over loopback HTTP
with its own pagination, in the shape Tally's reconciliation asks it (admin, every
project, reporting/openstack/adapter.py):

- compute: ``GET /v2.1/servers/detail?all_tenants=1&limit=L&marker=M`` at microversion
  2.69 (flavors embedded);
- block-storage: ``GET /v3/{project}/volumes/detail?all_tenants=1&limit=L&marker=M``
  (no microversion: a full run's);
- image: ``GET /v2/images?visibility=all&member_status=all&limit=L&marker=M``.

For each page size L (``--limits``, default 10, 100, 500, 1000: 1000 is every one's
default maximum and Tally's page) the marker is chosen so that a full page of L
follows it, as every page of a full listing but the first has; the page sizes are
interleaved over ``--rounds`` rounds (so the machine's load drifts over all alike)
after one unmeasured round, and each figure is a median.  A least-squares line
through the medians gives the fixed cost of a page and the cost per item on it,
printed as ``--page-latency SERVICE=MS+MS_PER_ITEM`` for ``tally-simcloud serve`` and
bench/sync.py (SERVICE as simcloud/api/*.py name their services), once for each figure.

Two figures per page size: the wall time until the body is read (its median), and
the CPU time the service's process spent meanwhile (``/proc/PID/stat``, every thread,
sampled at the clock tick: its mean), which the machine's other load does not
inflate.  The wall time includes the driver's token check (``TokenGate``: one
``GET /v3/auth/tokens`` to the simulated keystone per request, where
keystonemiddleware would answer from its token cache); the bench measures that call on
its own and takes its median off the wall fit's fixed cost (both figures printed).

Limits: these are not a production service's figures.  Lower than production: the
services run on SQLite (nova's under its functional fixtures, file-backed with WAL;
cinder's and glance's files under a work directory) rather than MySQL/Galera over a
network; nova asks its fake neutron, in-process, for the security groups of a
servers/detail page (a real one asks neutron over HTTP); one cell; ``--count``
resources in the tables (10^5-10^6 in a large cloud's).  Higher than production: nova
under its functional fixtures formats every debug log record (StandardLogging) and
keeps its INFO log in memory; each service is one process (the drivers' wsgiref
server, a thread a request) on this machine's 2 cores shared with other work, so the
wall figures move with its load (printed) and the CPU figures do not.  For the
simulated cloud, the CPU figures are the floor to give; the wall ones, what this
machine answered.  Neutron and octavia have no driver in the real-services tier, so no
figure is measured for ``network`` or ``load-balancer`` (docs/simcloud.md, "Page
latency").
Usage, from the checkout:

    python bench/real_pages.py [--count 1100] [--limits 10,100,500,1000] [--rounds 7]
                               [--services compute,block-storage,image]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

import requests

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.real import conftest as nova_tier  # noqa: E402
from tests.real import test_cinder as cinder_tier  # noqa: E402
from tests.real import test_glance as glance_tier  # noqa: E402
from tests.real.service_process import ServiceProcess, venv_path  # noqa: E402

# Notifications are not what is measured: oslo.messaging's in-process transport.
TRANSPORT = "fake:/"
PROJECTS = 10
SERVICES = ("compute", "block-storage", "image")
TIMEOUT_S = 120
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Listing:
    """One service's listing in the shape Tally's reconciliation reads it."""

    service: str
    url: str
    params: dict[str, Any]
    headers: dict[str, str]
    items_key: str
    next_href: Callable[[dict[str, Any]], str | None]


def _links_next(key: str) -> Callable[[dict[str, Any]], str | None]:
    def find(body: dict[str, Any]) -> str | None:
        for link in body.get(key) or []:
            if link.get("rel") == "next":
                return str(link["href"])
        return None
    return find


def _glance_next(body: dict[str, Any]) -> str | None:
    href = body.get("next")
    return str(href) if href else None


def _venv_python(service: str, venv: Path) -> Path:
    if not (venv / ".tally-complete").exists():
        raise SystemExit(f"no {service} virtualenv at {venv}: run "
                         f"`pytest tests/real` once to build it (this bench never does)")
    return venv / "bin" / "python"


def _admin_token(identity_url: str, world: Any) -> str:
    account = world.identity.users["admin"]
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": account.name, "domain": {"name": "Default"},
        "password": account.password}}},
        "scope": {"project": {"name": account.project_name, "domain": {"name": "Default"}}}}}
    answer = requests.post(f"{identity_url}/v3/auth/tokens", json=body, timeout=TIMEOUT_S)
    if answer.status_code != 201:
        raise SystemExit(f"the simulated keystone refused the admin: {answer.status_code} "
                         f"{answer.text}")
    return answer.headers["X-Subject-Token"]


@contextlib.contextmanager
def _started(service: str, identity_url: str, workdir: Path,
             token: str, admin_project: str) -> Iterator[tuple[ServiceProcess, Listing]]:
    """The real service behind the simulated keystone, and its listing."""
    process: ServiceProcess
    auth = {"X-Auth-Token": token}
    if service == "compute":
        python = _venv_python("nova", nova_tier.venv_path())
        process = nova_tier.RealNova(python, workdir, TRANSPORT, identity_url, "bench-nova")
        listing = Listing(service, f"{process.ready['compute_url']}/servers/detail",
                          {"all_tenants": 1},
                          {**auth, "OpenStack-API-Version": "compute 2.69",
                           "X-OpenStack-Nova-API-Version": "2.69"},
                          "servers", _links_next("servers_links"))
    elif service == "block-storage":
        python = _venv_python("cinder", venv_path("cinder-29", cinder_tier.REQUIREMENTS))
        process = cinder_tier.RealCinder(python, workdir, TRANSPORT, identity_url,
                                         "bench-cinder")
        listing = Listing(service,
                          f"{process.ready['volume_url']}/v3/{admin_project}/volumes/detail",
                          {"all_tenants": 1}, auth, "volumes", _links_next("volumes_links"))
    else:
        python = _venv_python("glance", venv_path("glance-33", glance_tier.REQUIREMENTS))
        process = glance_tier.RealGlance(python, workdir, TRANSPORT, identity_url,
                                         "bench-glance")
        listing = Listing(service, f"{process.ready['image_url']}/v2/images",
                          {"visibility": "all", "member_status": "all"}, auth, "images",
                          _glance_next)
    try:
        yield process, listing
    finally:
        process.stop()


def _cpu_s(pid: int) -> float:
    """The CPU seconds (user and system, every thread, exited ones too) of ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _get(listing: Listing, url: str, params: dict[str, Any] | None) -> tuple[float, Any]:
    """One page: the seconds until its body is read, and the body."""
    started = time.perf_counter()
    answer = requests.get(url, params=params, headers=listing.headers, timeout=TIMEOUT_S)
    elapsed = time.perf_counter() - started
    if answer.status_code != 200:
        raise SystemExit(f"{listing.service}: GET {answer.url} answered "
                         f"{answer.status_code}: {answer.text[:2000]}")
    return elapsed, answer.json()


def _walk(listing: Listing) -> list[str]:
    """Every id of the listing in its order, following the service's own next links."""
    ids: list[str] = []
    _, body = _get(listing, listing.url, {**listing.params, "limit": 1000})
    while True:
        ids.extend(str(item["id"]) for item in body[listing.items_key])
        href = listing.next_href(body)
        if href is None:
            return ids
        _, body = _get(listing, urljoin(listing.url, href), None)


def _page(listing: Listing, order: list[str], limit: int, pid: int) -> tuple[float, float]:
    """The wall seconds of a full page of ``limit`` after a marker (the last ``limit``
    items of the listing), and the CPU seconds the service's process spent meanwhile."""
    marker = order[len(order) - limit - 1]
    cpu = _cpu_s(pid)
    elapsed, body = _get(listing, listing.url,
                         {**listing.params, "limit": limit, "marker": marker})
    cpu = _cpu_s(pid) - cpu
    items = body[listing.items_key]
    if [str(item["id"]) for item in items] != order[-limit:]:
        raise SystemExit(f"{listing.service}: the page of {limit} after {marker} is not "
                         f"the listing's last {limit} items ({len(items)} answered)")
    return elapsed, cpu


def _token_check(identity_url: str, token: str, rounds: int) -> float:
    """Median seconds of the driver's token check, asked from here."""
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        answer = requests.get(f"{identity_url}/v3/auth/tokens?nocatalog",
                              headers={"X-Auth-Token": token, "X-Subject-Token": token},
                              timeout=TIMEOUT_S)
        times.append(time.perf_counter() - started)
        if answer.status_code != 200:
            raise SystemExit(f"token check answered {answer.status_code}: {answer.text}")
    return statistics.median(times)


@dataclass(frozen=True)
class Fit:
    """A least-squares line through one figure per page size (milliseconds)."""

    figures_ms: dict[int, float]
    raw_fixed_ms: float
    per_item_ms: float
    r_squared: float
    off_ms: float = 0.0

    @property
    def fixed_ms(self) -> float:
        return max(0.0, self.raw_fixed_ms - self.off_ms)

    def option(self, service: str) -> str:
        return f"--page-latency {service}={self.fixed_ms:.1f}+{self.per_item_ms:.3f}"


def fit(figures_s: dict[int, float], off_s: float = 0.0) -> Fit:
    """Least squares through ``figures_s`` (seconds a page of each size), ``off_s``
    taken off the fixed cost."""
    limits = sorted(figures_s)
    figures = {n: figures_s[n] * 1000 for n in limits}
    slope, intercept = statistics.linear_regression(limits, [figures[n] for n in limits])
    mean = statistics.fmean(figures.values())
    total = sum((figures[n] - mean) ** 2 for n in limits)
    residual = sum((figures[n] - (intercept + slope * n)) ** 2 for n in limits)
    return Fit(figures, intercept, slope, 1 - residual / total if total else 1.0,
               off_s * 1000)


@dataclass(frozen=True)
class Measured:
    service: str
    wall: Fit
    cpu: Fit
    spread_ms: dict[int, tuple[float, float]]


def measure(service: str, identity_url: str, world: Any, token: str, admin_project: str,
            count: int, limits: list[int], rounds: int) -> Measured:
    with tempfile.TemporaryDirectory(prefix=f"tally-bench-pages-{service}-") as work, \
            _started(service, identity_url, Path(work), token, admin_project) as (
                process, listing):
        started = time.perf_counter()
        process.call("populate", count=count, projects=PROJECTS)
        print(f"{service}: {count} resources written in {process.service}'s database in "
              f"{time.perf_counter() - started:.1f} s", flush=True)
        order = _walk(listing)
        if len(order) != count or len(set(order)) != count:
            raise SystemExit(f"{service}: the listing holds {len(order)} items "
                             f"({len(set(order))} distinct), not the {count} written")
        walls: dict[int, list[float]] = {n: [] for n in limits}
        cpus: dict[int, list[float]] = {n: [] for n in limits}
        for round_no in range(rounds + 1):
            for limit in limits:
                elapsed, cpu = _page(listing, order, limit, process.proc.pid)
                if round_no:  # the first round warms the service's caches, unmeasured
                    walls[limit].append(elapsed)
                    cpus[limit].append(cpu)
        token_s = _token_check(identity_url, token, rounds * len(limits))
    # CPU time is sampled at the clock tick: its mean is the unbiased figure.
    return Measured(service, fit({n: statistics.median(walls[n]) for n in limits}, token_s),
                    fit({n: statistics.fmean(cpus[n]) for n in limits}),
                    {n: (min(walls[n]) * 1000, max(walls[n]) * 1000) for n in limits})


def _limits(text: str) -> list[int]:
    try:
        limits = sorted({int(part) for part in text.split(",")})
    except ValueError:
        limits = []
    if len(limits) < 2 or limits[0] < 1 or limits[-1] > 1000:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not two or more page sizes from 1 to 1000 (e.g. 10,100,500,1000)")
    return limits


def _services(text: str) -> list[str]:
    named = [part.strip() for part in text.split(",") if part.strip()]
    unknown = set(named) - set(SERVICES)
    if not named or unknown:
        raise argparse.ArgumentTypeError(
            f"{text!r}: services are some of {', '.join(SERVICES)}")
    return named


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=1100,
                        help="resources written into each service (more than the "
                             "largest page size)")
    parser.add_argument("--limits", type=_limits, default=[10, 100, 500, 1000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--services", type=_services, default=list(SERVICES))
    args = parser.parse_args()
    if args.count <= args.limits[-1]:
        parser.error(f"--count {args.count} must exceed the largest page size "
                     f"{args.limits[-1]} (every measured page follows a marker)")
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    from simcloud.config import WorldConfig
    from simcloud.server import SimCloudServer

    world = SimCloudServer(WorldConfig(seed=7, scale=5, empty_start=True))
    world.start()
    fits = []
    try:
        identity_url = f"{world.base_url}/identity"
        token = _admin_token(identity_url, world)
        admin_project = world.identity.users["admin"].project_id
        print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores); "
              f"{args.count} resources, pages of {args.limits}, {args.rounds} rounds",
              flush=True)
        for service in args.services:
            found = measure(service, identity_url, world, token, admin_project,
                            args.count, args.limits, args.rounds)
            fits.append(found)
            for limit in args.limits:
                low, high = found.spread_ms[limit]
                print(f"  {service} limit={limit}: wall median "
                      f"{found.wall.figures_ms[limit]:.1f} ms (min {low:.1f}, max "
                      f"{high:.1f}), service CPU mean {found.cpu.figures_ms[limit]:.1f} ms")
            print(f"  {service}: wall {found.wall.raw_fixed_ms:.1f} ms + "
                  f"{found.wall.per_item_ms:.3f} ms/item (R^2 {found.wall.r_squared:.3f}), "
                  f"token check {found.wall.off_ms:.1f} ms off the fixed cost; service CPU "
                  f"{found.cpu.raw_fixed_ms:.1f} ms + {found.cpu.per_item_ms:.3f} ms/item "
                  f"(R^2 {found.cpu.r_squared:.3f})", flush=True)
    finally:
        world.stop()
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
    print("wall time (this machine, at its load):")
    print("  " + " ".join(found.wall.option(found.service) for found in fits))
    print("service CPU time (what a page takes of an idle core):")
    print("  " + " ".join(found.cpu.option(found.service) for found in fits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
