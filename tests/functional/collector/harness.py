"""Real processes and real RabbitMQ traffic for the collector's functional tests.

- ``ReportingServer``: ``tally-manage db upgrade`` then ``tally-reporting`` on a
  fixed free port (so it can be stopped and started again at the same URL).
- ``CollectorProcess``: ``tally-collector --config-file F`` as a subprocess that
  tests SIGKILL and restart.
- ``TcpProxy``: sits between the collector and RabbitMQ so a test can cut every
  AMQP connection (a broker restart as the client sees it) without touching the
  RabbitMQ other suites share.
- Publishing: the oslo ``Notifier`` with a real ``RequestContext`` per exchange,
  and raw messagingv2 envelopes through kombu, exactly as nova and cinder send them.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import kombu
import oslo_messaging
import requests
import sqlalchemy as sa
from oslo_config import cfg
from oslo_context import context as oslo_context

from mapping.oslo_forms import to_envelope

BIN = Path(sys.executable).parent
INGEST_TOKEN = "collector-test-ingest"
READ_TOKEN = "collector-test-read"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(condition: Callable[[], bool], timeout: float, what: str, step: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(step)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class ReportingServer:
    """A real tally-reporting on a migrated database."""

    def __init__(self, workdir: Path, db_url: str) -> None:
        self.workdir = workdir
        self.db_url = db_url
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        tokens = workdir / "tokens.yaml"
        tokens.write_text(f"{INGEST_TOKEN}: ingest\n{READ_TOKEN}: read\n")
        self.config = workdir / "reporting.conf"
        self.config.write_text(
            f"[database]\nconnection = {db_url}\n"
            f"[api]\nbind = 127.0.0.1:{self.port}\nworkers = 2\ntokens_file = {tokens}\n"
        )
        self.proc: subprocess.Popen[bytes] | None = None
        self._engine = sa.create_engine(db_url)
        subprocess.run([str(BIN / "tally-manage"), "--config-file", str(self.config),
                        "db", "upgrade"], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        log = open(self.workdir / "reporting.log", "ab")  # noqa: SIM115 - kept by the process
        self.proc = subprocess.Popen(
            [str(BIN / "tally-reporting"), "--config-file", str(self.config)],
            stdout=log, stderr=subprocess.STDOUT)
        wait_until(self.healthy, 60, "tally-reporting to answer /healthz")

    def healthy(self) -> bool:
        try:
            return requests.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.proc = None
        # gunicorn's workers must be gone before the port is reused
        wait_until(lambda: not self.healthy(), 30, "tally-reporting to stop")

    def close(self) -> None:
        self.stop()
        self._engine.dispose()

    def event_ids(self, cloud: str) -> list[str]:
        """Every stored event id of a cloud (duplicates would show up twice)."""
        with self._engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT event_id FROM events WHERE cloud = :c"), {"c": cloud})
            return [row[0] for row in rows]

    def history(self, cloud: str, resource_type: str, resource_id: str) -> list[dict[str, Any]]:
        response = requests.get(
            f"{self.url}/v1/resources/openstack/{cloud}/{resource_type}/{resource_id}/events",
            headers={"Authorization": f"Bearer {READ_TOKEN}"}, timeout=10)
        response.raise_for_status()
        return list(response.json()["items"])

    def rejected_count(self, cloud: str) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(
                sa.text("SELECT count(*) FROM rejected_events WHERE cloud = :c"), {"c": cloud}
            ).scalar_one())


class TcpProxy:
    """A loopback TCP relay whose connections can all be cut at once."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self._target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True).start()

    def _pump(self, a: socket.socket, b: socket.socket) -> None:
        peers = {a: b, b: a}
        try:
            while True:
                readable, _, _ = select.select([a, b], [], [], 1.0)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    peers[sock].sendall(data)
        except OSError:
            return
        finally:
            with self._lock:  # a relay that ended is no longer live, nor cut later
                self._sockets = [s for s in self._sockets if s not in peers]
            for sock in (a, b):
                with contextlib.suppress(OSError):
                    sock.close()

    def live(self) -> int:
        """How many relayed connections are open now."""
        with self._lock:
            return len(self._sockets) // 2

    def cut(self) -> int:
        """Reset every relayed connection; returns how many sockets were cut."""
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
        return len(sockets)

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        self.cut()


def collector_config(
    path: Path, *, cloud: str, transport_url: str, reporting_url: str, pool: str,
    topic: str, buffer_dir: Path, exchanges: Iterable[str] | None = None,
    metrics_port: int = 0, **extra: Any,
) -> Path:
    token_file = path.parent / "ingest.token"
    token_file.write_text(INGEST_TOKEN + "\n")
    lines = [
        "[DEFAULT]", f"transport_url = {transport_url}",
        "[collector]", f"cloud = {cloud}", f"pool = {pool}", f"topics = {topic}",
        f"buffer_dir = {buffer_dir}", f"reporting_url = {reporting_url}",
        f"token_file = {token_file}", f"metrics_bind = 127.0.0.1:{metrics_port}",
        "retry_initial_delay_s = 0.1", "retry_max_delay_s = 1.0",
    ]
    if exchanges is not None:
        lines.append("exchanges = " + ",".join(exchanges))
    lines += [f"{key} = {value}" for key, value in extra.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


class CollectorProcess:
    """``tally-collector --config-file F`` as a subprocess."""

    def __init__(self, config: Path, log: Path) -> None:
        self.config = config
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "TALLY_OSC_CLOUD"}
        handle = open(self.log, "ab")  # noqa: SIM115 - kept by the process
        self.proc = subprocess.Popen(
            [str(BIN / "tally-collector"), "--config-file", str(self.config)],
            stdout=handle, stderr=subprocess.STDOUT, env=env)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 60) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


# --- publishing -------------------------------------------------------------------------


def kombu_url(rabbit_url: str) -> str:
    url = rabbit_url.replace("rabbit://", "amqp://", 1)
    return url if not url.endswith("/") else url + "/"


def wire_message(event_type: str, payload: dict[str, Any], context: dict[str, Any],
                 publisher_id: str, message_id: str | None = None,
                 timestamp: str = "2026-11-29 23:46:12.702142") -> dict[str, Any]:
    """A flat messagingv2 message as oslo.messaging's AMQP driver builds it."""
    message: dict[str, Any] = {
        "message_id": message_id or str(uuid.uuid4()),
        "publisher_id": publisher_id,
        "event_type": event_type,
        "priority": "INFO",
        "payload": payload,
        "timestamp": timestamp,
        "_unique_id": uuid.uuid4().hex,
    }
    message.update({f"_context_{key}": value for key, value in context.items()})
    return message


class WirePublisher:
    """Publishes raw messagingv2 envelopes with kombu (what a real service puts on the bus)."""

    def __init__(self, rabbit_url: str) -> None:
        self._connection = kombu.Connection(kombu_url(rabbit_url))
        self._producer = kombu.Producer(self._connection.channel())

    def publish(self, exchange: str, topic: str, message: dict[str, Any]) -> None:
        # Declared as oslo.messaging declares it (amqp_durable_queues/auto_delete off).
        target = kombu.Exchange(exchange, type="topic", durable=False, auto_delete=False)
        self._producer.publish(
            json.dumps(to_envelope(message)), exchange=target, declare=[target],
            routing_key=f"{topic}.info", content_type="application/json",
            content_encoding="utf-8", serializer=None)

    def close(self) -> None:
        self._connection.release()


@contextlib.contextmanager
def oslo_notifier(rabbit_url: str, exchange: str, topic: str, publisher_id: str) -> Iterator[Any]:
    """An oslo Notifier (driver messagingv2) whose transport publishes to ``exchange``."""
    conf = cfg.ConfigOpts()
    conf([], project="tally-functional-test", default_config_files=[])
    oslo_messaging.set_transport_defaults(control_exchange=exchange)
    try:
        transport = oslo_messaging.get_notification_transport(conf, url=rabbit_url)
    finally:
        oslo_messaging.set_transport_defaults(control_exchange="openstack")
    try:
        yield oslo_messaging.Notifier(transport, publisher_id=publisher_id,
                                      driver="messagingv2", topics=[topic])
    finally:
        transport.cleanup()


def request_context(project_id: str) -> oslo_context.RequestContext:
    return oslo_context.RequestContext(project_id=project_id, user_id="functional-user")


def delete_queues(rabbit_url: str, names: Iterable[str]) -> None:
    """Remove the queues a test created (its pool, and oslo's default <topic>.info)."""
    with kombu.Connection(kombu_url(rabbit_url)) as connection:
        channel = connection.channel()
        for name in names:
            with contextlib.suppress(Exception):
                channel.queue_delete(name)
                continue
            channel = connection.channel()


def queue_depth(rabbit_url: str, name: str) -> tuple[int, int]:
    """(ready messages, consumers) of a queue, by a passive declare."""
    with kombu.Connection(kombu_url(rabbit_url)) as connection:
        _, messages, consumers = connection.channel().queue_declare(name, passive=True)
        return int(messages), int(consumers)


def consumed(rabbit_url: str, name: str) -> bool:
    """Whether queue ``name`` exists with a consumer: a listener declares and binds its
    queue (on every exchange) before it consumes, so what is published now reaches it."""
    try:
        return queue_depth(rabbit_url, name)[1] >= 1
    except Exception:  # no such queue yet: the passive declare fails
        return False


def metric(port: int, name: str, labels: dict[str, str] | None = None) -> float | None:
    """One sample of the collector's /metrics, or None when it is not served (yet)."""
    samples = metric_samples(port)
    if samples is None:
        return None
    for sample_name, sample_labels, value in samples:
        if sample_name == name and (labels is None or sample_labels == labels):
            return value
    return None


def metric_samples(port: int) -> list[tuple[str, dict[str, str], float]] | None:
    """Every sample of one scrape of the collector's /metrics (None: not served yet)."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        text = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=2).text
    except requests.RequestException:
        return None
    return [(sample.name, sample.labels, float(sample.value))
            for family in text_string_to_metric_families(text) for sample in family.samples]
