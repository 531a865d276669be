"""Real processes for the end-to-end month: tally-reporting and tally-collector.

The simulated cloud runs in the test process (its clock is driven from there); the
Reporting API and the collector are the real commands, each with its own config
file, talking over loopback HTTP and the real RabbitMQ.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
import yaml

BIN = Path(sys.executable).parent
TOKENS = {"e2e-ingest": "ingest", "e2e-read": "read", "e2e-admin": "admin"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


class Process:
    def __init__(self, argv: list[str], log: Path, env: dict[str, str]) -> None:
        self.log = log
        handle = open(log, "ab")  # noqa: SIM115 - kept by the process
        self.proc = subprocess.Popen(argv, stdout=handle, stderr=subprocess.STDOUT, env=env)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]


class Reporting:
    """``tally-manage db upgrade`` then ``tally-reporting`` with a clouds file."""

    def __init__(self, workdir: Path, db_url: str, cloud: str, os_cloud: str,
                 clouds_yaml: Path, services: list[str] | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        tokens = workdir / "tokens.yaml"
        tokens.write_text(yaml.safe_dump(TOKENS))
        clouds_file = workdir / "tally-clouds.yaml"
        clouds_file.write_text(yaml.safe_dump({"clouds": [{
            "name": cloud, "platform": "openstack", "adapter": "openstack",
            "adapter_config": {"os_cloud": os_cloud, "include_octavia": True}
            if services is None else {"os_cloud": os_cloud, "services": services}}]}))
        self.config = workdir / "reporting.conf"
        self.config.write_text(
            f"[database]\nconnection = {db_url}\n"
            f"[api]\nbind = 127.0.0.1:{self.port}\nworkers = 2\ntokens_file = {tokens}\n"
            f"[sync]\nclouds_file = {clouds_file}\n")
        env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(clouds_yaml)}
        subprocess.run([str(BIN / "tally-manage"), "--config-file", str(self.config),
                        "db", "upgrade"], check=True, capture_output=True, timeout=120, env=env)
        self.process = Process([str(BIN / "tally-reporting"), "--config-file", str(self.config)],
                               workdir / "reporting.log", env)
        wait_until(self.healthy, 60, "tally-reporting to answer /healthz")
        self.session = requests.Session()

    def healthy(self) -> bool:
        if self.process.proc.poll() is not None:
            raise AssertionError(f"tally-reporting exited:\n{self.process.tail()}")
        try:
            return requests.get(f"{self.url}/healthz", timeout=1).status_code == 200
        except requests.RequestException:
            return False

    def get(self, path: str, **params: Any) -> Any:
        """The decoded body of a GET as admin (raises on an error status)."""
        response = self.session.get(f"{self.url}{path}", params=params, timeout=120,
                                    headers={"Authorization": "Bearer e2e-admin"})
        response.raise_for_status()
        return response.json()

    def send(self, method: str, path: str, body: object = None) -> requests.Response:
        return self.session.request(method, f"{self.url}{path}", json=body, timeout=120,
                                    headers={"Authorization": "Bearer e2e-admin"})

    def sync(self, cloud: str, at: str) -> requests.Response:
        return self.session.post(f"{self.url}/internal/sync/{cloud}", params={"at": at},
                                 headers={"Authorization": "Bearer e2e-admin"}, timeout=120)

    def stop(self) -> None:
        self.session.close()
        self.process.stop()


class Collector:
    def __init__(self, workdir: Path, cloud: str, transport_url: str, reporting_url: str,
                 pool: str, exchanges: list[str]) -> None:
        token = workdir / "ingest.token"
        token.write_text("e2e-ingest\n")
        buffer_dir = workdir / "buffer"
        config = workdir / "collector.conf"
        config.write_text("\n".join([
            "[DEFAULT]", f"transport_url = {transport_url}",
            "[collector]", f"cloud = {cloud}", f"pool = {pool}", "topics = notifications",
            "exchanges = " + ",".join(exchanges), f"buffer_dir = {buffer_dir}",
            f"reporting_url = {reporting_url}", f"token_file = {token}",
            f"metrics_bind = 127.0.0.1:{free_port()}",
            "retry_initial_delay_s = 0.1", "retry_max_delay_s = 1.0",
        ]) + "\n")
        env = {k: v for k, v in os.environ.items() if k != "TALLY_OSC_CLOUD"}
        self.process = Process([str(BIN / "tally-collector"), "--config-file", str(config)],
                               workdir / "collector.log", env)

    def stop(self) -> None:
        self.process.stop()
