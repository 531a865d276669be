"""Ingest throughput and the cost of a late event's fold, on PostgreSQL.

1. Starts ``tally-reporting`` (2 gunicorn workers) on a fresh database (with the
   partitions of the stream's month, as the service keeps the current month's) and posts
   ``--events`` events of each workload below in batches of 1000 (two clients, one
   per worker).  In the same run, interleaved with the posts, the same rows are
   inserted with a plain ``INSERT ... ON CONFLICT (event_id) DO NOTHING`` from Python
   into a copy of the events table in the same database: the floor.  Prints each
   workload's rate and its ratio to the floor (validation, dedupe and the fold
   included).  The workloads, each over N/4 instances living
   create -> resize -> power off -> delete:

   - ``realistic`` (the stream a cloud sends; target >= 0.75): timestamps ascending
     across the whole stream, instance by instance within each step, so every batch
     of 1000 holds 1000 *different* instances and, after the first N/4 events (the
     creates), every event updates an instance the database already holds;
   - ``every-late`` (target >= 0.5): the same batches sent newest first, so after
     the first N/4 events every event sorts before its instance's newest stored
     event and the instance's history is replayed;
   - ``easy`` (an extra line): each instance's four events side by side in one batch,
     so a batch folds four events per instance with one row write.
2. Folds late events (each sorting before its resource's newest event, so the
   resource's history is replayed) into a database holding 10,000 other events and
   into one holding 1,000,000, and prints the median cost of each and their ratio
   (the fold reads one resource's history, so the ratio should stay near 1).

Table upkeep is the server's, as in production: the bench never ANALYZEs on its own
behalf (``--analyze-between-rounds`` runs the ANALYZE a maintenance job would, to
compare).  It prints whether the server's autovacuum is on and, at the end, how often
autovacuum analysed and vacuumed the three tables during the run; on a server with
autovacuum off every round runs on tables that never had statistics.

Where the time went: with the server started by the bench (not ``--target``), each
workload's summary adds the CPU its posts used per 1,000 events, from ``/proc``: the
server's workers, their PostgreSQL backends and the posting client, and the floor's
Python and PostgreSQL, with the share of both cores that was busy meanwhile.  On a
machine whose cores the server, the database and the client share, the ratio is
bound by these sums, not by any one request's latency.

Usage: python bench/ingest.py [--pg-url postgresql+psycopg://postgres@127.0.0.1/postgres]
       [--events 160000] [--rounds 3] [--small 10000] [--large 1000000]
       [--workloads realistic,every-late,easy] [--no-late-fold] [--analyze-between-rounds]
       [--target URL --token T --db-url URL]   # post to a running tally-reporting
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import requests
import sqlalchemy as sa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.process_cpu import PhaseCpu, processes_named  # noqa: E402
from bench.reporting_process import running_reporting  # noqa: E402
from bench.scratch_database import scratch_database  # noqa: E402
from reporting.clock import utcnow  # noqa: E402
from reporting.db import migrations, partitions  # noqa: E402
from reporting.db.engine import make_engine, make_sessionmaker  # noqa: E402
from reporting.ingest import ingest  # noqa: E402

BATCH = 1000
T0 = dt.datetime(2026, 1, 1)
KINDS = ["compute.instance.create.end", "compute.instance.resize.confirm.end",
         "compute.instance.power_off", "compute.instance.delete.end"]


def make_events(count: int, tag: str) -> list[dict[str, Any]]:
    """The easy shape: ``count`` events over count/4 instances, each instance's
    create, resize, power off and delete side by side."""
    return [_event(tag, n, *divmod(n, len(KINDS))) for n in range(count)]


def make_realistic(count: int, tag: str) -> list[dict[str, Any]]:
    """The stream a cloud sends: the same lives, in timestamp order across
    instances (every instance's create, then every instance's resize, ...)."""
    instances = count // len(KINDS)
    return [_event(tag, n, n % instances, n // instances) for n in range(instances * len(KINDS))]


def newest_batches_first(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The batches of ``events`` (1000 each) in reverse order: every event late."""
    batches = [events[i : i + BATCH] for i in range(0, len(events), BATCH)]
    return [event for batch in reversed(batches) for event in batch]


WORKLOADS = {
    "realistic": make_realistic,
    "every-late": lambda count, tag: newest_batches_first(make_realistic(count, tag)),
    "easy": make_events,
}


def _event(tag: str, n: int, resource: int, step: int) -> dict[str, Any]:
    kind = KINDS[step]
    payload: dict[str, Any] = {}
    if step < 3:
        payload = {"state": "shutoff" if step == 2 else "active",
                   "size": {"vcpus": step + 1, "ram_gb": 2.0, "disk_gb": 20, "flavor": "m1"}}
    return {
        "event_id": f"{tag}-{n}",
        "event_type": kind,
        "platform": "openstack",
        "cloud": "bench",
        "resource_type": "instance",
        "resource_id": f"{tag}-vm-{resource}",
        "project_id": f"p{resource % 50}",
        "timestamp": (T0 + dt.timedelta(seconds=n)).isoformat() + "Z",
        "source": "collector",
        "payload": payload,
    }


@contextmanager
def fresh_database(admin_url: str) -> Iterator[str]:
    with scratch_database(admin_url) as url:
        migrations.upgrade(url)
        # The stream's month has its partitions, as the service keeps the current
        # month's: events land in it and an ended interval moves out of DEFAULT.
        engine = make_engine(url)
        partitions.ensure(engine, 1, T0)
        engine.dispose()
        yield url


@contextmanager
def server(url: str, workdir: Path) -> Iterator[tuple[str, str]]:
    token = uuid.uuid4().hex
    (workdir / "tokens.yaml").write_text(f"{token}: ingest\n")
    config = workdir / "reporting.conf"
    config.write_text(
        f"[database]\nconnection = {url}\n"
        f"[api]\nbind = 127.0.0.1:0\nworkers = 2\nauth_strategy = token\n"
        f"tokens_file = {workdir / 'tokens.yaml'}\n"
    )
    with running_reporting(config, workdir / "reporting.log") as base_url:
        yield base_url, token


def post_all(base_url: str, token: str, events: list[dict[str, Any]], clients: int = 2,
             meter: PhaseCpu | None = None) -> float:
    """Events per second posting ``events`` in batches of 1000 from ``clients`` threads.

    Bodies are encoded before the clock starts: the client's own JSON work is not
    the server's throughput.
    """
    bodies = [json.dumps({"events": events[i : i + BATCH]}).encode()
              for i in range(0, len(events), BATCH)]
    failures: list[str] = []
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def client(mine: list[bytes]) -> None:
        with requests.Session() as http:
            for body in mine:
                response = http.post(f"{base_url}/v1/events", data=body, headers=headers,
                                     timeout=300)
                if response.status_code != 200 or response.json()["rejected"]:
                    failures.append(response.text[:300])

    threads = [threading.Thread(target=client, args=(bodies[n::clients],)) for n in range(clients)]
    with meter.measure() if meter else nullcontext():
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
    if failures:
        raise SystemExit(f"ingest failed: {failures[0]}")
    return len(events) / elapsed


def plain_insert(url: str, events: list[dict[str, Any]], meter: PhaseCpu | None = None) -> float:
    """Events per second of INSERT ... ON CONFLICT DO NOTHING into a copy of ``events``."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        # The plain, unpartitioned table with event_id unique (events before migration
        # 0032): the floor stays the same whatever the events table has become.
        exists = conn.execute(sa.text("SELECT to_regclass('bench_events')")).scalar()
        if exists is None:
            conn.execute(sa.text(
                "CREATE TABLE bench_events (LIKE events INCLUDING DEFAULTS INCLUDING STORAGE)"))
            for statement in (
                    "ALTER TABLE bench_events ADD PRIMARY KEY (seq)",
                    "ALTER TABLE bench_events ADD UNIQUE (event_id)",
                    'CREATE INDEX ON bench_events (resource_id, "timestamp", seq, platform, '
                    "cloud, resource_type)",
                    "CREATE INDEX ON bench_events (cloud, received_at)",
                    "CREATE INDEX ON bench_events (cloud, date_trunc('month', \"timestamp\"), seq)"):
                conn.execute(sa.text(statement))
    table = sa.Table("bench_events", sa.MetaData(), autoload_with=engine)
    from sqlalchemy.dialects import postgresql

    stmt = postgresql.insert(table).on_conflict_do_nothing(index_elements=["event_id"])
    now = utcnow()
    rows = [
        {**{k: v for k, v in e.items() if k != "timestamp"},
         "timestamp": dt.datetime.fromisoformat(e["timestamp"][:-1]), "received_at": now}
        for e in events
    ]
    with engine.connect() as conn:  # connected before the clock starts, like the server's pool
        with meter.measure() if meter else nullcontext():
            start = time.perf_counter()
            for i in range(0, len(rows), BATCH):
                with conn.begin():
                    conn.execute(stmt, rows[i : i + BATCH])
            elapsed = time.perf_counter() - start
    engine.dispose()
    return len(rows) / elapsed


def interleaved(base_url: str, token: str, url: str, events: list[dict[str, Any]],
                chunk: int = 10 * BATCH, meters: CpuSplit | None = None) -> tuple[float, float]:
    """(api, plain) events per second, alternating the two every ``chunk`` events so
    load from anything else on the host falls on both alike."""
    api_seconds = plain_seconds = 0.0
    for i in range(0, len(events), chunk):
        part = events[i : i + chunk]
        api_seconds += len(part) / post_all(base_url, token, part,
                                            meter=meters.api if meters else None)
        plain_seconds += len(part) / plain_insert(url, part,
                                                  meter=meters.floor if meters else None)
        if meters:
            meters.events += len(part)
    return len(events) / api_seconds, len(events) / plain_seconds


class CpuSplit:
    """Where one workload's CPU went, API posts and floor inserts apart (``PhaseCpu``):
    the server's processes, the database's backends (every client backend of the
    bench's database but the one reading them: the other side's sit idle while one
    side is measured) and this process (the posting clients; the floor's Python)."""

    def __init__(self, url: str, server_config: Path) -> None:
        self._engine = sa.create_engine(url)
        self.events = 0
        self.api = PhaseCpu({"workers": lambda: processes_named(str(server_config)),
                             "postgresql": self._backends})
        self.floor = PhaseCpu({"postgresql": self._backends})

    def _backends(self) -> list[int]:
        with self._engine.connect() as conn:
            return list(conn.execute(sa.text(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid()")).scalars())

    def report(self) -> str:
        if not (self.api.available and self.events):
            return "  (no /proc here: CPU not measured)"
        per = 1000 / self.events * 1000  # seconds over all events -> ms per 1000 events

        def line(meter: PhaseCpu, names: dict[str, str]) -> str:
            parts = [f"{label} {meter.seconds[key] * per:5.1f}" for key, label in names.items()]
            total = sum(meter.seconds[key] for key in names) * per
            busy = meter.busy()
            share = f", cores busy {busy:.0%}" if busy is not None else ""
            return f"{', '.join(parts)}; total {total:5.1f}{share}"

        return ("  CPU ms per 1000 events, api:   "
                + line(self.api, {"workers": "workers", "postgresql": "their PostgreSQL",
                                  "own": "client"})
                + "\n  CPU ms per 1000 events, floor: "
                + line(self.floor, {"own": "Python", "postgresql": "PostgreSQL"}))

    def close(self) -> None:
        self._engine.dispose()


def drop_baseline_table(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("DROP TABLE IF EXISTS bench_events"))
    engine.dispose()


UPKEPT = ("events", "current_resources", "resource_intervals")


def analyze(url: str) -> None:
    """ANALYZE the fold's tables, as a maintenance job would (``--analyze-between-rounds``)."""
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sa.text(f"ANALYZE {', '.join(UPKEPT)}"))
    engine.dispose()


def autovacuum_setting(url: str) -> str:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        setting = str(conn.execute(sa.text("SHOW autovacuum")).scalar_one())
    engine.dispose()
    return setting


def upkeep_counts(url: str) -> dict[str, tuple[int, int, int]]:
    """(autoanalyze, autovacuum, manual analyze) counts of the fold's tables."""
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text(
            "SELECT relname, autoanalyze_count, autovacuum_count, analyze_count "
            "FROM pg_stat_user_tables WHERE relname = ANY(:names)"), {"names": list(UPKEPT)})
        counts = {name: (int(a), int(v), int(m)) for name, a, v, m in rows}
    engine.dispose()
    return counts


def fill_other_events(url: str, count: int) -> None:
    """``count`` events of other resources, written in bulk by PostgreSQL itself."""
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "INSERT INTO events (event_id, event_type, platform, cloud, resource_type, "
            "resource_id, project_id, timestamp, source, payload, received_at) "
            "SELECT 'other-' || g, 'compute.instance.create.end', 'openstack', 'bench', "
            "'instance', 'other-vm-' || (g / 4), 'p1', "
            "TIMESTAMP '2026-01-01' + g * INTERVAL '1 second', 'collector', "
            "CAST('{\"state\": \"active\"}' AS json), now() "
            "FROM generate_series(1, :count) AS g"
        ), {"count": count})
    engine.dispose()


class LateFold:
    """Ingests late events (each sorting before its resource's newest event, so the
    resource's history of ``history`` events is replayed) and times each one."""

    def __init__(self, url: str, history: int = 20) -> None:
        self.engine = make_engine(url)
        self.factory = make_sessionmaker(self.engine)
        self.history = history
        self.costs: list[float] = []

    def sample(self) -> None:
        resource = f"late-vm-{len(self.costs)}"
        base = T0 + dt.timedelta(days=400)

        def item(n: int, at: dt.datetime) -> dict[str, Any]:
            return {
                "event_id": f"{resource}-{n}", "event_type": "compute.instance.resize.confirm.end",
                "platform": "openstack", "cloud": "bench", "resource_type": "instance",
                "resource_id": resource, "project_id": "p1",
                "timestamp": at.isoformat() + "Z", "source": "collector",
                "payload": {"state": "active"},
            }

        ingest(self.factory,
                      [item(n, base + dt.timedelta(minutes=n)) for n in range(self.history)],
                      require_size_schema=False)
        late = item(self.history, base + dt.timedelta(seconds=30))  # between the 1st and 2nd
        start = time.perf_counter()
        (result,) = ingest(self.factory, [late], require_size_schema=False)
        self.costs.append(time.perf_counter() - start)
        if result.status != "stored":
            raise SystemExit(f"late event not stored: {result}")

    def close(self) -> None:
        self.engine.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pg-url", default=os.environ.get(
        "TALLY_TEST_PG_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--events", type=int, default=160_000)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--large", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=60, help="late events per database")
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated, of " + ", ".join(WORKLOADS))
    parser.add_argument("--no-late-fold", action="store_true",
                        help="skip the late-fold cost at --small vs --large events")
    parser.add_argument("--analyze-between-rounds", action="store_true",
                        help="ANALYZE the fold's tables before each round, as a maintenance "
                        "job would (by default upkeep is the server's: autovacuum)")
    parser.add_argument("--target", help="URL of a running tally-reporting to post to "
                        "instead of starting one (needs --token and --db-url)")
    parser.add_argument("--token", help="an ingest token of --target")
    parser.add_argument("--db-url", help="the PostgreSQL URL of --target's database")
    args = parser.parse_args()
    if args.target and not (args.token and args.db_url):
        parser.error("--target needs --token and --db-url")
    workloads = args.workloads.split(",")
    if unknown := set(workloads) - set(WORKLOADS):
        parser.error(f"unknown workload(s): {', '.join(sorted(unknown))}")
    if args.events < 160_000:
        # 40,000 events post in ~2 s on a fast machine: a neighbour's second of work
        # moved a round's ratio by a tenth (0.51-0.65 in one run of three rounds).
        print("note: fewer than 160,000 events make a noisy figure", file=sys.stderr)

    # Each workload is interleaved with its own floor (a neighbour's load hits both
    # alike); each round posts new events (the database grows the same way for both).
    api_rates: dict[str, list[float]] = {name: [] for name in workloads}
    floor_rates: dict[str, list[float]] = {name: [] for name in workloads}
    cpu: dict[str, CpuSplit] = {}
    with ExitStack() as stack:
        if args.target:
            # An already running tally-reporting; --db-url is its database (the
            # baseline table is created there and dropped afterwards).
            base_url, token, url = args.target, args.token, args.db_url
            stack.callback(drop_baseline_table, url)
        else:
            url = stack.enter_context(fresh_database(args.pg_url))
            workdir = stack.enter_context(tempfile.TemporaryDirectory())
            base_url, token = stack.enter_context(server(url, Path(workdir)))
            # The server and its database are this machine's: their CPU is readable.
            for name in workloads:
                cpu[name] = CpuSplit(url, Path(workdir) / "reporting.conf")
                stack.callback(cpu[name].close)
        upkeep = "yes" if args.analyze_between_rounds else "no (upkeep is the server's)"
        print(f"server autovacuum: {autovacuum_setting(url)}; ANALYZE between rounds: {upkeep}",
              flush=True)
        tag = uuid.uuid4().hex[:8]  # new event ids on every run against a target
        warm_up = make_events(BATCH * 10, f"warm-{tag}")
        post_all(base_url, token, warm_up)
        plain_insert(url, warm_up)
        for round_ in range(args.rounds):
            if args.analyze_between_rounds:
                analyze(url)
            for name in workloads:
                events = WORKLOADS[name](args.events, f"r{round_}-{name}-{tag}")
                api_rate, floor_rate = interleaved(base_url, token, url, events,
                                                   meters=cpu.get(name))
                api_rates[name].append(api_rate)
                floor_rates[name].append(floor_rate)
                print(f"round {round_ + 1} {name:>10}: api {api_rate:8,.0f} events/s, "
                      f"floor {floor_rate:8,.0f} events/s, ratio {api_rate / floor_rate:.2f}",
                      flush=True)
        counts = upkeep_counts(url)
        print("upkeep during the run (autoanalyze, autovacuum, ANALYZE): " + ", ".join(
            f"{name} {counts.get(name, (0, 0, 0))}" for name in UPKEPT))
    targets = {"realistic": 0.75, "every-late": 0.5}
    print(f"\nmedians of {args.rounds} rounds, {args.events:,} events per workload, "
          f"2 clients, batches of {BATCH}, 2 gunicorn workers:")
    for name in workloads:
        ratios = [a / b for a, b in zip(api_rates[name], floor_rates[name], strict=True)]
        target = f" (target >= {targets[name]})" if name in targets else " (extra line)"
        print(f"  {name:>10}: api {statistics.median(api_rates[name]):8,.0f} events/s, "
              f"floor {statistics.median(floor_rates[name]):8,.0f} events/s, "
              f"ratio {statistics.median(ratios):.2f} median, {max(ratios):.2f} best{target}")
        if name in cpu:
            print(cpu[name].report())
    if args.no_late_fold:
        return 0

    with fresh_database(args.pg_url) as small_url, fresh_database(args.pg_url) as large_url:
        fill_other_events(small_url, args.small)
        fill_other_events(large_url, args.large)
        folds = {args.small: LateFold(small_url), args.large: LateFold(large_url)}
        for _ in range(args.samples):  # alternate, so host load falls on both alike
            for fold_ in folds.values():
                fold_.sample()
        for fold_ in folds.values():
            fold_.close()
    small = statistics.median(folds[args.small].costs)
    large = statistics.median(folds[args.large].costs)
    print(f"late event fold with {args.small:,} other events:   {small * 1000:.2f} ms (median)")
    print(f"late event fold with {args.large:,} other events: {large * 1000:.2f} ms (median)")
    print(f"ratio large/small: {large / small:.2f} (O(one resource's history): ~1)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
