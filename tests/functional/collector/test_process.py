"""The tally-collector process: stopping while RabbitMQ is unreachable."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.functional.collector.harness import (
    BIN,
    CollectorProcess,
    collector_config,
    free_port,
    metric,
    wait_until,
)


def test_sigterm_before_rabbitmq_is_reached_exits_cleanly(tmp_path: Path) -> None:
    # Nothing listens on this port: oslo keeps retrying the connection.
    metrics_port = free_port()
    config = collector_config(
        tmp_path / "collector.conf", cloud="os-unreachable",
        transport_url=f"rabbit://guest:guest@127.0.0.1:{free_port()}/",
        reporting_url=f"http://127.0.0.1:{free_port()}", pool="tally-unreachable",
        topic="notifications", buffer_dir=tmp_path / "buffer", metrics_port=metrics_port)
    collector = CollectorProcess(config, tmp_path / "collector.log")
    collector.start()
    try:
        wait_until(lambda: metric(metrics_port, "tally_collector_buffer_depth") == 0, 60,
                   "the collector's metrics")
        wait_until(lambda: b"Connection failed" in (tmp_path / "collector.log").read_bytes(),
                   60, "a failed connection attempt")
        assert collector.alive()
        assert collector.terminate(timeout=60) == 0
    finally:
        if collector.alive():
            collector.kill()
    log = (tmp_path / "collector.log").read_bytes()
    assert b"Stopping before RabbitMQ was reached" in log


def test_bad_configuration_exits_non_zero_with_one_line(tmp_path: Path) -> None:
    config = collector_config(
        tmp_path / "collector.conf", cloud="", transport_url="rabbit://127.0.0.1:1/",
        reporting_url="http://127.0.0.1:1", pool="p", topic="notifications",
        buffer_dir=tmp_path / "buffer")
    result = subprocess.run(
        [str(BIN / "tally-collector"), "--config-file", str(config)],
        capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    lines = [line for line in result.stderr.decode().splitlines()
             if line.startswith("tally-collector:")]
    assert lines == ["tally-collector: configuration error: no cloud name: set [collector] "
                     "cloud or the TALLY_OSC_CLOUD environment variable"]
