"""Slow clients against a real tally-reporting (2 gunicorn workers x 4 threads) on
PostgreSQL: 16 connections that send half a request and wait do not starve it when
they reach it through the nginx configuration shipped in deploy/nginx/ (nginx
buffers whole requests before it passes them on).  The proxy's configuration is the
shipped file itself; only its listen port and upstream address are rewritten for
the test.

The negative control reaches gunicorn directly with one worker of 4 threads, so no
kernel choice of accept queue is involved: the same 16 clients take its 4 threads and
4 concurrent /healthz calls all go unanswered; once the clients leave, it answers
again.  (With 2 workers the outcome depends on how the kernel spread the connections
over the two workers' accept queues, which is why that case is not asserted.)"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests

from tests.functional.reporting.fixtures import RunningServer, auth, start_server, write_config

REPO = Path(__file__).resolve().parents[3]
SHIPPED = REPO / "deploy" / "nginx" / "tally-reporting.conf"
SLOW_CLIENTS = 16
PROMPT_S = 5.0  # an ordinary request must be answered within this


def nginx_binary() -> str:
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)
    if found is None:
        pytest.fail("nginx is not installed; install it (Debian: apt-get install nginx, "
                    "as .ci/run does) to test deploy/nginx/tally-reporting.conf")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proxy_server_block(upstream: str, port: int) -> str:
    """The shipped file with its upstream set to ``upstream`` and its listen port to ``port``."""
    text = SHIPPED.read_text()
    text, servers = re.subn(r"(?m)^(\s*server )127\.0\.0\.1:8779;", rf"\g<1>{upstream};", text)
    text, listens = re.subn(r"(?m)^(\s*listen )8780;", rf"\g<1>127.0.0.1:{port};", text)
    assert (servers, listens) == (1, 1), "deploy/nginx/tally-reporting.conf changed shape"
    return text


def client_timeout_s() -> int:
    """The longer of the shipped file's client_header_timeout and client_body_timeout."""
    found = re.findall(r"(?m)^\s*client_(?:header|body)_timeout (\d+)s;", SHIPPED.read_text())
    assert len(found) == 2, found
    return max(int(seconds) for seconds in found)


@contextmanager
def running_nginx(workdir: Path, upstream: str) -> Iterator[str]:
    """A foreground nginx using the shipped server block, everything under ``workdir``."""
    workdir.mkdir()
    (workdir / "tally-reporting.conf").write_text(proxy_server_block(upstream, port := free_port()))
    temp = {name: workdir / name for name in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")}
    (workdir / "nginx.conf").write_text(
        # As root nginx would hand its workers to "nobody", who cannot enter pytest's tmp.
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"worker_processes 1;\npid {workdir / 'nginx.pid'};\n"
        f"error_log {workdir / 'error.log'} info;\n"
        "events { worker_connections 256; }\n"
        "http {\n"
        f"    access_log {workdir / 'access.log'};\n"
        + "".join(f"    {name}_temp_path {path};\n" for name, path in temp.items())
        + f"    include {workdir / 'tally-reporting.conf'};\n}}\n")
    process = subprocess.Popen(
        [nginx_binary(), "-p", str(workdir), "-c", str(workdir / "nginx.conf"),
         "-g", "daemon off;"],
        stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120  # only a guard against a hang
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                log = workdir / "error.log"
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"nginx did not start: {log.read_text() if log.exists() else ''}")
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def slow_clients(base_url: str) -> Iterator[list[socket.socket]]:
    """SLOW_CLIENTS connections, each holding half a request: half of them stop inside
    the headers, half inside a body announced longer than what they send."""
    address = urlsplit(base_url)
    sockets: list[socket.socket] = []
    try:
        for n in range(SLOW_CLIENTS):
            sock = socket.create_connection((address.hostname, address.port), timeout=5)
            sockets.append(sock)
            if n % 2:
                sock.sendall(b"POST /v1/events HTTP/1.1\r\nHost: tally\r\n"
                             b"Content-Type: application/json\r\nContent-Length: 4096\r\n"
                             b"Authorization: Bearer tok-ingest\r\n\r\n{\"events\": [")
            else:
                sock.sendall(b"GET /v1/resources HTTP/1.1\r\nHost: tally\r\nAccept: applic")
            time.sleep(0.02)
        time.sleep(0.5)  # let the server take them up
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def event() -> dict[str, object]:
    return {
        "event_id": "slow-clients-e1", "event_type": "compute.instance.create.end",
        "platform": "openstack", "cloud": "c1", "resource_type": "instance",
        "resource_id": "vm-slow-clients", "project_id": "p1",
        "timestamp": "2026-01-01T00:00:00Z", "source": "collector",
        "payload": {"state": "active",
                    "size": {"vcpus": 1, "ram_gb": 2, "disk_gb": 10, "flavor": "f1"}},
    }


def healthz(base_url: str) -> int | str:
    """The status of GET /healthz, or the name of the error when none came in time."""
    try:
        return requests.get(f"{base_url}/healthz", timeout=PROMPT_S).status_code
    except requests.RequestException as exc:
        return type(exc).__name__


def serve(database: str, tokens_file: str, tmp_path: Path,
          workers: int) -> Iterator[RunningServer]:
    config = write_config(tmp_path / "reporting.conf", database, tokens_file,
                          api={"workers": workers, "threads": 4})
    running = start_server(config, tmp_path / "reporting.log")
    yield running
    running.stop()


@pytest.fixture
def server(pg_migrated_database: str, tokens_file: str,
           tmp_path: Path) -> Iterator[RunningServer]:
    yield from serve(pg_migrated_database, tokens_file, tmp_path, workers=2)


@pytest.fixture
def one_worker(pg_migrated_database: str, tokens_file: str,
               tmp_path: Path) -> Iterator[RunningServer]:
    yield from serve(pg_migrated_database, tokens_file, tmp_path, workers=1)


def test_without_the_proxy_slow_clients_starve_one_worker(one_worker: RunningServer) -> None:
    # The control of the test below: what the proxy prevents does happen without it.
    assert healthz(one_worker.base_url) == 200
    with slow_clients(one_worker.base_url):
        with ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda _: healthz(one_worker.base_url), range(4)))
        assert answers == ["ReadTimeout"] * 4
    # The worker is not dead, only its threads were taken: it answers once they leave.
    deadline = time.monotonic() + 120  # only a guard against a hang
    while healthz(one_worker.base_url) != 200:
        assert time.monotonic() < deadline, "tally-reporting did not answer again"


def test_slow_clients_do_not_starve_it_behind_the_shipped_proxy(
        server: RunningServer, tmp_path: Path) -> None:
    upstream = urlsplit(server.base_url).netloc
    with running_nginx(tmp_path / "nginx", upstream) as proxy_url, \
            slow_clients(proxy_url) as held:
        assert healthz(proxy_url) == 200
        listed = requests.get(f"{proxy_url}/v1/resources", headers=auth("read"),
                              timeout=PROMPT_S)
        assert listed.status_code == 200, listed.text
        posted = requests.post(f"{proxy_url}/v1/events", json={"events": [event()]},
                               headers=auth("ingest"), timeout=PROMPT_S)
        assert posted.status_code == 200, posted.text
        assert posted.json()["stored"] == 1, posted.text
        # The proxy's request really reached the API (X-Forwarded-* set by the proxy).
        again = requests.get(f"{proxy_url}/v1/resources", headers=auth("read"),
                             timeout=PROMPT_S)
        assert "vm-slow-clients" in again.text
        # nginx still holds every slow client (within client_header/body_timeout):
        # the API stayed reachable while they waited, not because they were dropped.
        for sock in held:
            sock.setblocking(False)
            with pytest.raises(BlockingIOError):
                sock.recv(1)
        # Then the proxy's timeouts end them (408 in its access log, nothing upstream).
        for sock in held:
            sock.settimeout(client_timeout_s() + 10)
            assert sock.recv(1) == b""
