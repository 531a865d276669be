"""Benchmark: /healthz and a one-event ingest while expensive readers load the API.

The shape measured: ``--resources`` resources (10,000 by default) over ``--projects``
projects (100) with ``--events`` events each (20: 200,000 events, their intervals and
current rows), loaded set-based into a fresh PostgreSQL database exactly as
``bench/statements.py`` loads its month (a resource every 36 hours from late
September 2026, a third deleted by their last event), with a default price list.

1. starts ``tally-reporting`` (2 gunicorn workers x 4 threads, the defaults of
   ``[api] read_threads`` and ``[api] read_statement_timeout_s``) on it;
2. unloaded: ``--samples`` calls of ``GET /healthz`` and as many one-event
   ``POST /v1/events``, one after another (the baseline of the same run);
3. loaded: ``--readers`` clients (16) ask, for ``--seconds`` (60), again and again
   for the most expensive reads there are: ``/v1/usage`` over all time (from
   0001-01-01 to 9999-12-31, 1000 groups a page), every project's statement summary
   of October 2026, and one project's statement; a refused read is asked again after
   0.1 s (a client ignoring Retry-After).  Meanwhile one prober calls ``/healthz``
   and posts one event, each every 0.2 s.

Prints the latency (median, p99, max) of health and ingest unloaded and loaded, the
ratio loaded/unloaded of their p99, and what the readers got (answers by status and
code).  Target: loaded ingest p99 and every loaded ``/healthz`` under 1 s.
``--unreserved`` repeats the loaded phase with ``read_threads = threads`` and no
statement timeout (the API without its read limits) for comparison.

Usage, from the checkout:

    python bench/read_load.py [--resources 10000] [--projects 100] [--events 20]
                              [--readers 16] [--seconds 60] [--samples 50]
                              [--read-threads 2] [--unreserved] [--keep]

Needs the PostgreSQL named by TALLY_TEST_PG_URL (loopback default); creates its own
database and drops it at the end (``--keep`` leaves it, and says its name).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import itertools
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.reporting_process import running_reporting  # noqa: E402
from bench.scratch_database import scratch_database  # noqa: E402
from bench.statements import CLOUD, PRICES, _load  # noqa: E402
from reporting.billing import versions  # noqa: E402
from reporting.db import engine as db_engine  # noqa: E402
from reporting.db import migrations  # noqa: E402

PG_URL = os.environ.get("TALLY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
PERIOD = "2026-10"
CLIENT_TIMEOUT_S = 180.0
PROBE_EVERY_S = 0.2
REFUSED_RETRY_S = 0.1
_probe_ids = itertools.count()


@contextlib.contextmanager
def server(url: str, workdir: Path, **api: object) -> Iterator[tuple[str, dict[str, str]]]:
    """A tally-reporting on ``url``; yields its base URL and a token per role."""
    tokens = {"ingest": uuid.uuid4().hex, "read": uuid.uuid4().hex}
    (workdir / "tokens.yaml").write_text(
        "".join(f"{token}: {role}\n" for role, token in tokens.items()))
    settings = {"bind": "127.0.0.1:0", "workers": 2, "threads": 4, "auth_strategy": "token",
                "tokens_file": workdir / "tokens.yaml", **api}
    config = workdir / "reporting.conf"
    config.write_text(f"[database]\nconnection = {url}\n[api]\n"
                      + "".join(f"{key} = {value}\n" for key, value in settings.items()))
    with running_reporting(config, workdir / "reporting.log", stop_timeout_s=120) as base_url:
        yield base_url, tokens


def one_event() -> dict[str, Any]:
    n = next(_probe_ids)
    return {"event_id": f"probe-{uuid.uuid4().hex}", "event_type": "compute.instance.create.end",
            "platform": "openstack", "cloud": "probe", "resource_type": "instance",
            "resource_id": f"vm-probe-{n}", "project_id": "probe",
            "timestamp": "2026-11-01T00:00:00Z", "source": "collector",
            "payload": {"state": "active",
                        "size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "f1"}}}


def timed_health(base: str) -> float:
    started = time.perf_counter()
    answer = requests.get(f"{base}/healthz", timeout=CLIENT_TIMEOUT_S)
    seconds = time.perf_counter() - started
    assert answer.status_code == 200, answer.text
    return seconds


def timed_ingest(base: str, tokens: dict[str, str]) -> float:
    started = time.perf_counter()
    answer = requests.post(f"{base}/v1/events", json={"events": [one_event()]},
                           headers={"Authorization": f"Bearer {tokens['ingest']}"},
                           timeout=CLIENT_TIMEOUT_S)
    seconds = time.perf_counter() - started
    assert answer.status_code == 200 and answer.json()["stored"] == 1, answer.text
    return seconds


def expensive_reads(projects: int) -> list[str]:
    return [
        "/v1/usage?from=0001-01-01T00:00:00Z&to=9999-12-31T00:00:00Z&limit=1000",
        f"/v1/statements?cloud={CLOUD}&period={PERIOD}&limit=1000",
        f"/v1/statements?cloud={CLOUD}&period={PERIOD}&project_id=p{(projects - 1):04d}",
    ]


def loaded(base: str, tokens: dict[str, str], args: argparse.Namespace
           ) -> tuple[list[float], list[float], collections.Counter[str], list[float]]:
    """Health and ingest latencies while the readers run, their outcomes, and the
    latencies of the reads answered 200."""
    stop = threading.Event()
    outcomes: collections.Counter[str] = collections.Counter()
    served: list[float] = []
    lock = threading.Lock()
    paths = expensive_reads(args.projects)

    def reader(n: int) -> None:
        headers = {"Authorization": f"Bearer {tokens['read']}"}
        for path in itertools.islice(itertools.cycle(paths), n % len(paths), None):
            if stop.is_set():
                return
            started = time.perf_counter()
            try:
                answer = requests.get(base + path, headers=headers, timeout=CLIENT_TIMEOUT_S)
            except requests.RequestException as exc:
                with lock:
                    outcomes[type(exc).__name__] += 1
                continue
            seconds = time.perf_counter() - started
            code = "" if answer.status_code == 200 else " " + str(
                answer.json().get("error", {}).get("code", "?"))
            with lock:
                outcomes[f"{answer.status_code}{code}"] += 1
                if answer.status_code == 200:
                    served.append(seconds)
            if answer.status_code != 200:
                time.sleep(REFUSED_RETRY_S)

    readers = [threading.Thread(target=reader, args=(n,), daemon=True)
               for n in range(args.readers)]
    for thread in readers:
        thread.start()
    time.sleep(2.0)  # the readers have taken what they can
    health: list[float] = []
    ingest: list[float] = []
    ends = time.monotonic() + args.seconds
    while time.monotonic() < ends:
        health.append(timed_health(base))
        ingest.append(timed_ingest(base, tokens))
        time.sleep(PROBE_EVERY_S)
    stop.set()
    for thread in readers:
        thread.join(CLIENT_TIMEOUT_S)
    return health, ingest, outcomes, served


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def line(label: str, values: list[float]) -> str:
    return (f"{label}: median {statistics.median(values) * 1000:.0f} ms, p99 "
            f"{p99(values) * 1000:.0f} ms, max {max(values) * 1000:.0f} ms "
            f"({len(values)} calls)")


def phase(name: str, url: str, workdir: Path, args: argparse.Namespace, **api: object) -> None:
    workdir.mkdir()
    with server(url, workdir, **api) as (base, tokens):
        for _ in range(3):  # warm both workers' connections
            timed_health(base)
            timed_ingest(base, tokens)
        calm_health = [timed_health(base) for _ in range(args.samples)]
        calm_ingest = [timed_ingest(base, tokens) for _ in range(args.samples)]
        print(f"{name}, unloaded:", flush=True)
        print("  " + line("/healthz", calm_health))
        print("  " + line("ingest of one event", calm_ingest), flush=True)
        health, ingest, outcomes, served = loaded(base, tokens, args)
    print(f"{name}, {args.readers} expensive readers for {args.seconds} s:")
    print("  " + line("/healthz", health))
    print("  " + line("ingest of one event", ingest))
    print(f"  p99 loaded / unloaded: /healthz {p99(health) / p99(calm_health):.1f}x, ingest "
          f"{p99(ingest) / p99(calm_ingest):.1f}x")
    print("  readers got: " + ", ".join(f"{key}: {count}" for key, count in
                                        sorted(outcomes.items())))
    if served:
        print("  " + line("reads answered 200", served))
    target = max(health) < 1.0 and p99(ingest) < 1.0
    print(f"  target (every /healthz and ingest p99 under 1 s): "
          f"{'met' if target else 'NOT met'}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resources", type=int, default=10_000)
    parser.add_argument("--projects", type=int, default=100)
    parser.add_argument("--events", type=int, default=20)
    parser.add_argument("--readers", type=int, default=16)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--read-threads", type=int, default=2,
                        help="[api] read_threads of the limited phase (default 2 of 4)")
    parser.add_argument("--unreserved", action="store_true",
                        help="also run the loaded phase without the read limits")
    parser.add_argument("--keep", action="store_true", help="leave the database in place")
    args = parser.parse_args()
    with scratch_database(PG_URL, "tally_bench_read_load", keep=args.keep) as url, \
            tempfile.TemporaryDirectory(prefix="tally-bench-read-load-") as tmp:
        migrations.upgrade(url)
        engine = db_engine.make_engine(url)
        try:
            factory = db_engine.make_sessionmaker(engine)
            with factory() as session:
                versions.add(session, "default", PRICES, "bench", dt.datetime(2026, 12, 1))
                session.commit()
            print(f"loading {args.resources} resources x {args.events} events over "
                  f"{args.projects} projects ...", flush=True)
            _load(engine, args)
        finally:
            engine.dispose()
        phase(f"with the read limits (read_threads {args.read_threads} of 4, statement "
              "timeout 30 s)", url, Path(tmp) / "limited", args, read_threads=args.read_threads)
        if args.unreserved:
            phase("without them (read_threads 4 of 4, no statement timeout)", url,
                  Path(tmp) / "unreserved", args, read_threads=4, read_statement_timeout_s=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
