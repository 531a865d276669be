"""Benchmark: tally-collector draining a RabbitMQ backlog into a running Reporting API.

In one run, against the same RabbitMQ:

1. baseline: a no-op oslo.messaging batch notification listener (same batch size,
   prefetch and executor as the collector) drains a backlog of N notifications;
2. no-op beside the API's ingest: the same no-op drain while the bench POSTs the
   same number of events to the running ``tally-reporting`` at the listener's pace
   (1000 more taken, one more request), i.e. the API's and PostgreSQL's share of the
   machine without any of the collector's own work: about the most the delivered
   rate can reach on this machine, so "delivered / no-op beside API ingest" is what
   the collector's mapping, buffer and delivery cost;
3. collector: the ``tally-collector`` process drains an identical backlog through
   its durable disk buffer and delivers every event to a ``tally-reporting``
   (PostgreSQL, fresh database) until the API holds all N.  Two rates: consumed
   (the queue is empty, every event durably buffered, delivery running beside)
   and delivered (the API holds all N);
4. collector, buffer only: the same with the Reporting API unreachable, i.e. the
   listener and the durable buffer alone;
5. the Reporting API's own ceiling: the bench POSTs the same events in batches of
   1000 straight to the API, as many requests in flight as the collector's
   ``delivery_concurrency`` (``--concurrency``), which bounds any delivered rate.

Each measured phase starts once the machine is quiet (under 10% CPU for 0.3 s):
what the previous phase left running (PostgreSQL's autovacuum or checkpoint,
RabbitMQ writing the backlog) does not land in the next one's figure.

It prints the rates and their ratios to the no-op listener (target: >= 0.9), and
the delivered rate over the no-op beside the API's ingest.
Usage, from the checkout:

    python bench/collector.py [--count 20000] [--batch 200] [--rounds 5] [--concurrency 2]

Needs the RabbitMQ and PostgreSQL named by TALLY_TEST_RABBIT_URL / TALLY_TEST_PG_URL
(loopback defaults).  Creates and removes its own database, queues and files.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import oslo_messaging  # noqa: E402
import requests  # noqa: E402
import sqlalchemy as sa  # noqa: E402
from oslo_config import cfg  # noqa: E402

from bench.process_cpu import machine_times  # noqa: E402
from bench.scratch_database import scratch_database  # noqa: E402
from mapping.openstack import map_notification  # noqa: E402
from tests.functional.collector.harness import (  # noqa: E402
    INGEST_TOKEN,
    CollectorProcess,
    ReportingServer,
    WirePublisher,
    collector_config,
    delete_queues,
    free_port,
    metric,
    metric_samples,
    queue_depth,
    wait_until,
    wire_message,
)

EXCHANGES = ["nova", "cinder", "neutron", "glance", "octavia"]
DELIVERY_BATCH = 1000  # the collector's largest request
KINDS: list[tuple[str, str, str, Callable[[int], dict[str, Any]]]] = [
    ("nova", "compute.instance.create.end", "compute.bench",
     lambda i: {"instance_id": f"i-{i}", "tenant_id": "p", "state": "active", "vcpus": 1,
                "memory_mb": 512, "root_gb": 1, "ephemeral_gb": 0, "instance_type": "m1.tiny"}),
    ("cinder", "volume.create.end", "volume.bench",
     lambda i: {"volume_id": f"v-{i}", "tenant_id": "p", "size": 1, "volume_type": "t",
                "status": "available"}),
    ("neutron", "floatingip.create.end", "network.bench",
     lambda i: {"floatingip": {"id": f"f-{i}", "tenant_id": "p",
                               "floating_ip_address": "10.0.0.1"}}),
    ("glance", "image.upload", "image.localhost",
     lambda i: {"id": f"g-{i}", "owner": "p", "size": 1024}),
    ("octavia", "octavia.loadbalancer.create.end", "null",
     lambda i: {"loadbalancer_id": f"lb-{i}", "project_id": "p"}),
]


class NoopEndpoint:
    def __init__(self) -> None:
        self.count = 0
        self._progress = threading.Condition()

    def info(self, messages: list[dict[str, Any]]) -> None:
        with self._progress:
            self.count += len(messages)
            self._progress.notify_all()

    def wait_for(self, wanted: int, timeout: float = 600) -> None:
        """Return once the listener has taken ``wanted`` notifications."""
        with self._progress:
            if not self._progress.wait_for(lambda: self.count >= wanted, timeout):
                raise RuntimeError(f"no-op listener saw {self.count} of {wanted}")


def settle(max_wait: float = 30.0, busy_below: float = 0.1) -> None:
    """Wait until the machine is quiet before a measured phase: RabbitMQ writing the
    backlog just published, PostgreSQL's autovacuum or checkpoint after the previous
    phase.  Every phase then starts from the same state, whatever ran before it."""
    deadline = time.monotonic() + max_wait
    while time.monotonic() < deadline:
        before = machine_times()
        time.sleep(0.3)
        after = machine_times()
        if before is None or after is None:
            return
        busy, total = after[0] - before[0], after[1] - before[1]
        if total > 0 and busy / total < busy_below:
            return
    print(f"  (the machine stayed busy for {max_wait:.0f}s; measuring anyway)")


def _targets(topic: str) -> list[oslo_messaging.Target]:
    return [oslo_messaging.Target(topic=topic, exchange=e) for e in EXCHANGES]


def _listener(rabbit_url: str, topic: str, pool: str, batch: int, endpoint: Any) -> Any:
    conf = cfg.ConfigOpts()
    conf([], project="tally-bench", default_config_files=[])
    transport = oslo_messaging.get_notification_transport(conf, url=rabbit_url)
    # the collector's default prefetch (2 x listener_batch_size)
    conf.set_default("rabbit_qos_prefetch_count", 2 * batch, group="oslo_messaging_rabbit")
    listener = oslo_messaging.get_batch_notification_listener(
        transport, _targets(topic), [endpoint], executor="threading", allow_requeue=True,
        pool=pool, batch_size=batch, batch_timeout=0.5)
    return transport, listener


def _declare_queue(rabbit_url: str, topic: str, pool: str, batch: int) -> None:
    """Let oslo declare and bind the pool's queue, then leave it to fill."""
    transport, listener = _listener(rabbit_url, topic, pool, batch, NoopEndpoint())
    listener.start()
    wait_until(lambda: queue_depth(rabbit_url, pool)[1] >= 1, 30, "the queue to exist")
    listener.stop()
    listener.wait()
    transport.cleanup()


def _backlog(rabbit_url: str, topic: str, pool: str, batch: int, count: int) -> None:
    """The pool's queue, declared and bound by oslo, holding ``count`` notifications."""
    _declare_queue(rabbit_url, topic, pool, batch)
    publisher = WirePublisher(rabbit_url)
    try:
        for i in range(count):
            exchange, event_type, publisher_id, payload = KINDS[i % len(KINDS)]
            publisher.publish(exchange, topic, wire_message(
                event_type, payload(i), {"project_id": "p"}, publisher_id, str(uuid.uuid4())))
    finally:
        publisher.close()
    wait_until(lambda: queue_depth(rabbit_url, pool)[0] >= count, 60, "the backlog to settle")


def _start_consuming(collector: CollectorProcess, rabbit_url: str, pool: str) -> None:
    """Start the collector on a quiet machine; return once it consumes from ``pool``."""
    settle()
    collector.start()
    wait_until(lambda: queue_depth(rabbit_url, pool)[1] >= 1, 60, "the collector to consume",
               step=0.02)


def run_buffer_only(rabbit_url: str, workdir: Path, count: int, batch: int) -> float:
    """Rate of the collector draining the backlog into its buffer, the API unreachable."""
    uid = uuid.uuid4().hex[:8]
    topic, pool = f"bench-{uid}", f"bench-collector-{uid}"
    metrics_port = free_port()
    config = collector_config(
        workdir / f"collector-{uid}.conf", cloud=f"bench-{uid}", transport_url=rabbit_url,
        reporting_url=f"http://127.0.0.1:{free_port()}", pool=pool, topic=topic,
        buffer_dir=workdir / f"buffer-{uid}", exchanges=EXCHANGES, metrics_port=metrics_port,
        listener_batch_size=batch, retry_max_delay_s=5)
    collector = CollectorProcess(config, workdir / f"collector-{uid}.log")
    try:
        _backlog(rabbit_url, topic, pool, batch, count)
        _start_consuming(collector, rabbit_url, pool)
        start = time.monotonic()
        wait_until(lambda: (metric(metrics_port, "tally_collector_buffer_depth") or 0) >= count,
                   900, "the backlog in the buffer", step=0.1)
        elapsed = time.monotonic() - start
        collector.terminate()
        return count / elapsed
    finally:
        if collector.alive():
            collector.kill()
        delete_queues(rabbit_url, [pool, f"{topic}.info"])


def _api_bodies(count: int) -> list[str]:
    """The backlog's events as POST /v1/events bodies of 1000, for a cloud of their own."""
    cloud = f"bench-direct-{uuid.uuid4().hex[:8]}"
    bodies = []
    for start in range(0, count, DELIVERY_BATCH):
        events = []
        for i in range(start, min(count, start + DELIVERY_BATCH)):
            _, event_type, publisher_id, payload = KINDS[i % len(KINDS)]
            event = map_notification(cloud, {"project_id": "p"}, publisher_id, event_type,
                                     payload(i), {"message_id": str(uuid.uuid4()),
                                                  "timestamp": "2026-11-29 23:46:12.702142"})
            events.append(event)
        bodies.append(json.dumps({"events": events}))
    return bodies


def _poster(reporting: ReportingServer) -> Callable[[str], None]:
    """POSTs one body, one HTTP session per thread."""
    local = threading.local()

    def post(body: str) -> None:
        if not hasattr(local, "session"):
            local.session = requests.Session()
            local.session.headers.update({"Authorization": f"Bearer {INGEST_TOKEN}",
                                          "Content-Type": "application/json"})
        local.session.post(f"{reporting.url}/v1/events", data=body,
                           timeout=300).raise_for_status()

    return post


def run_api_ceiling(reporting: ReportingServer, count: int, concurrency: int) -> float:
    """Events per second the Reporting API stores from batches of 1000, ``concurrency``
    requests in flight (as the collector's delivery)."""
    bodies = _api_bodies(count)
    post = _poster(reporting)
    settle()
    with ThreadPoolExecutor(concurrency) as pool:
        begin = time.monotonic()
        list(pool.map(post, bodies))
        return count / (time.monotonic() - begin)


def run_baseline(rabbit_url: str, count: int, batch: int,
                 beside: ReportingServer | None = None, concurrency: int = 2) -> float:
    """Rate of the no-op listener draining the backlog.

    With ``beside``, that Reporting API stores the same number of events at the
    listener's pace meanwhile: a body of 1000 is POSTed (``concurrency`` in flight)
    each time the listener has taken 1000 more, as the collector delivers what it has
    consumed, and the rate runs until the API holds them all: what the collector could
    reach if its own work (mapping, buffer, delivery) cost nothing, on cores it shares
    with the API, PostgreSQL and RabbitMQ."""
    uid = uuid.uuid4().hex[:8]
    topic, pool = f"bench-{uid}", f"bench-noop-{uid}"
    try:
        _backlog(rabbit_url, topic, pool, batch, count)
        posts: list[Callable[[], None]] = []
        if beside is not None:
            post = _poster(beside)
            posts = [functools.partial(post, body) for body in _api_bodies(count)]
        endpoint = NoopEndpoint()
        transport, listener = _listener(rabbit_url, topic, pool, batch, endpoint)
        # The bench's own heap (SQLAlchemy, requests, this module) would make every
        # full collection of the listener's thread slower than in a listener process
        # of its own; frozen, as tally-collector freezes its start-up heap.
        gc.collect()
        gc.freeze()
        settle()
        with ThreadPoolExecutor(concurrency) as posters:
            start = time.monotonic()
            listener.start()
            pending = []
            for sent, send in enumerate(posts, start=1):
                endpoint.wait_for(min(count, sent * DELIVERY_BATCH))
                pending.append(posters.submit(send))
            endpoint.wait_for(count)
            for future in pending:
                future.result()
            elapsed = time.monotonic() - start
        listener.stop()
        listener.wait()
        transport.cleanup()
        return count / elapsed
    finally:
        delete_queues(rabbit_url, [pool, f"{topic}.info"])


def run_collector(rabbit_url: str, reporting: ReportingServer, workdir: Path, count: int,
                  batch: int, concurrency: int) -> tuple[float, float]:
    """(delivered rate: backlog into the API, consumed rate: backlog out of RabbitMQ)."""
    uid = uuid.uuid4().hex[:8]
    topic, pool, cloud = f"bench-{uid}", f"bench-collector-{uid}", f"bench-{uid}"
    metrics_port = free_port()
    config = collector_config(
        workdir / f"collector-{uid}.conf", cloud=cloud, transport_url=rabbit_url,
        reporting_url=reporting.url, pool=pool, topic=topic,
        buffer_dir=workdir / f"buffer-{uid}", exchanges=EXCHANGES, metrics_port=metrics_port,
        listener_batch_size=batch, delivery_concurrency=concurrency)
    engine = sa.create_engine(reporting.db_url)
    collector = CollectorProcess(config, workdir / f"collector-{uid}.log")
    try:
        _backlog(rabbit_url, topic, pool, batch, count)
        _start_consuming(collector, rabbit_url, pool)
        start = time.monotonic()
        consumed_at = None
        # One scrape per poll, so the measuring costs the collector little: the
        # mapped counter says "out of RabbitMQ, in the buffer", delivered{stored}
        # says "the API answered stored" (it counts after the API's commit).
        while True:
            now = time.monotonic()
            totals = _totals(metrics_port)
            if consumed_at is None and totals.get("tally_collector_mapped_total", 0) >= count:
                consumed_at = now
            if totals.get("tally_collector_delivered_total/stored", 0) >= count:
                done_at = now
                break
            if now - start > 900:
                raise RuntimeError(f"only {totals} of {count} events delivered")
            time.sleep(0.1)
        with engine.connect() as conn:
            stored = int(conn.execute(
                sa.text("SELECT count(*) FROM events WHERE cloud = :c"), {"c": cloud}).scalar_one())
        if stored != count:
            raise RuntimeError(f"{stored} events stored for {count} notifications")
        collector.terminate()
        return count / (done_at - start), count / ((consumed_at or done_at) - start)
    finally:
        if collector.alive():
            collector.kill()
        engine.dispose()
        delete_queues(rabbit_url, [pool, f"{topic}.info"])


def _totals(metrics_port: int) -> dict[str, float]:
    """Counters of one scrape summed over their labels (the delivered counter per outcome)."""
    totals: dict[str, float] = {}
    for name, labels, value in metric_samples(metrics_port) or []:
        if name == "tally_collector_delivered_total":
            name = f"{name}/{labels.get('outcome', '')}"
        totals[name] = totals.get(name, 0.0) + value
    return totals


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=200, help="listener batch size (both)")
    parser.add_argument("--concurrency", type=int, default=2,
                        help="the collector's delivery_concurrency, also used for the "
                        "API ceiling")
    # Rounds of 20,000 moved from 0.72 to 1.00 of the no-op listener within one run:
    # a median wants five.
    parser.add_argument("--rounds", type=int, default=5,
                        help="the machine is shared: medians over rounds")
    args = parser.parse_args()
    rabbit_url = os.environ.get("TALLY_TEST_RABBIT_URL", "rabbit://guest:guest@127.0.0.1:5672/")
    pg_url = os.environ.get("TALLY_TEST_PG_URL",
                            "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")

    scratch = contextlib.ExitStack()
    db_url = scratch.enter_context(scratch_database(pg_url))
    try:
        with tempfile.TemporaryDirectory(prefix="tally-bench-") as tmp:
            workdir = Path(tmp)
            (workdir / "reporting").mkdir()
            reporting = ReportingServer(workdir / "reporting", db_url)
            reporting.start()
            try:
                labels = ["no-op oslo batch listener", "no-op beside API ingest",
                          "collector, buffer only", "collector, consumed",
                          "collector, delivered", "API ceiling (direct POSTs)"]
                notes = ["", "the API storing the events at the listener's pace",
                         "API unreachable: listener + durable buffer",
                         "all buffered, delivery running beside", "all N stored in the API",
                         f"bounds 'delivered' ({args.concurrency} in flight)"]
                ratios: list[list[float]] = [[] for _ in labels]
                own: list[float] = []  # delivered / no-op beside API ingest
                for round_no in range(1, args.rounds + 1):
                    baseline = run_baseline(rabbit_url, args.count, args.batch)
                    beside = run_baseline(rabbit_url, args.count, args.batch,
                                          reporting, args.concurrency)
                    buffered = run_buffer_only(rabbit_url, workdir, args.count, args.batch)
                    delivered, consumed = run_collector(
                        rabbit_url, reporting, workdir, args.count, args.batch,
                        args.concurrency)
                    ceiling = run_api_ceiling(reporting, args.count, args.concurrency)
                    print(f"round {round_no}: {args.count} notifications, listener batch "
                          f"{args.batch}, delivery batch {DELIVERY_BATCH}, "
                          f"{args.concurrency} in flight")
                    rates = [baseline, beside, buffered, consumed, delivered, ceiling]
                    for i, (label, rate, note) in enumerate(zip(labels, rates, notes, strict=True)):
                        ratios[i].append(rate / baseline)
                        print(f"  {label:<27}: {rate:7.0f}/s  ratio {rate / baseline:5.2f}  {note}")
                    own.append(delivered / beside)
                    print(f"  collector delivered / no-op beside API ingest: {own[-1]:5.2f}")
                    sys.stdout.flush()
                print(f"median ratio to the no-op listener over {args.rounds} round(s) "
                      "(target >= 0.90):")
                for label, values in zip(labels[1:], ratios[1:], strict=True):
                    print(f"  {label:<27}: {statistics.median(values):5.2f}")
                print("median of collector delivered / no-op beside API ingest: "
                      f"{statistics.median(own):5.2f}")
            finally:
                reporting.close()
    finally:
        scratch.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
