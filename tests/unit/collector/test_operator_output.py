"""tally-collector as an operator meets it: a misspelt option is refused, in its own
section as in oslo.messaging's and [DEFAULT], no eventlet notice on start,
``--help`` or an error, and retry lines that say the reason once."""

from __future__ import annotations

import gc
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests

from collector import cmd
from collector.buffer import EventBuffer
from collector.listener import NotificationEndpoint
from collector.metrics import CollectorMetrics
from tests.oslo_log_lines import oslo_log_lines

BIN = Path(sys.executable).parent


def _config(tmp_path: Path, extra: str = "", **collector: str) -> str:
    values = {"cloud": "os-unit", "buffer_dir": str(tmp_path / "buffer"),
              "reporting_url": "http://127.0.0.1:1", "metrics_bind": "",
              "auth_strategy": "noauth"}
    values.update(collector)
    lines = ["[DEFAULT]", "transport_url = fake:", "[collector]"]
    lines += [f"{key} = {value}" for key, value in values.items()]
    path = tmp_path / "collector.conf"
    path.write_text("\n".join(lines) + "\n" + extra)
    return str(path)


@pytest.fixture(autouse=True)
def _no_env_cloud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TALLY_OSC_CLOUD", raising=False)


def test_a_misspelt_collector_option_is_refused(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, reportin_url="http://127.0.0.1:8779")
    assert cmd.main(["--config-file", config]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tally-collector: configuration error: unknown option [collector] "
                   f"reportin_url in {config} (misspelt?)"]


def test_an_unknown_section_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, extra="[colector]\ncloud = x\n")
    assert cmd.main(["--config-file", config]) == 2
    assert "unknown section [colector]" in capsys.readouterr().err


@pytest.mark.parametrize(("extra", "section", "option"), [
    ("[DEFAULT]\ntranport_url = rabbit://guest:guest@127.0.0.1:5672/\n", "DEFAULT",
     "tranport_url"),
    ("[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = 10\n"
     "rabbit_qos_prefech_count = 5\n", "oslo_messaging_rabbit", "rabbit_qos_prefech_count"),
    ("[oslo_messaging_notifications]\ntopic = x\n", "oslo_messaging_notifications", "topic"),
])
def test_a_misspelt_oslo_messaging_option_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: str, section: str,
        option: str) -> None:
    """Left at its default, a misspelt transport_url would point at localhost unseen."""
    config = _config(tmp_path, extra=extra)
    assert cmd.main(["--config-file", config]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"tally-collector: configuration error: unknown option [{section}] "
                   f"{option} in {config} (misspelt?)"]


def test_every_documented_oslo_messaging_option_is_accepted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Options oslo.messaging lists but the fake driver does not load (RabbitMQ's, and
    [DEFAULT] rpc_response_timeout) are known, not refused."""
    from collector import service

    class Stub:
        def __init__(self, conf: object) -> None:
            pass

        def start(self) -> None:
            signal.raise_signal(signal.SIGTERM)

        def stop(self) -> None:
            pass

    monkeypatch.setattr(service, "Collector", Stub)
    config = _config(tmp_path, extra="[oslo_messaging_rabbit]\nrabbit_qos_prefetch_count = 5\n")
    Path(config).write_text(Path(config).read_text().replace(
        "[DEFAULT]\n", "[DEFAULT]\nrpc_response_timeout = 30\nexecutor_thread_pool_size = 8\n"))
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    try:
        assert cmd.main(["--config-file", config]) == 0
    finally:
        gc.unfreeze()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


@pytest.mark.parametrize("args", [["tally-collector", "--help"],
                                  ["tally-collector", "--config-file", "/nonexistent"],
                                  ["tally-simcloud", "--help"],
                                  ["tally-simcloud", "serve", "--bind", "nowhere"]])
def test_no_eventlet_notice(args: list[str]) -> None:
    result = subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True,
                            timeout=120)
    assert "Eventlet is deprecated" not in result.stderr
    assert "Warning" not in result.stderr, result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_collector_until(config: str, log: Path, done: Callable[[str], bool]) -> str:
    """Run the real tally-collector (its own oslo.log setup, writing ``log``) until
    ``done(log text)``, stop it, and return its log."""
    process = subprocess.Popen([str(BIN / "tally-collector"), "--config-file", config],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not done(log.read_text() if log.exists() else ""):
            assert process.poll() is None, process.stderr.read() if process.stderr else ""
            time.sleep(0.1)
    finally:
        process.terminate()
        process.wait(60)
    return log.read_text()


def test_a_connection_failure_is_logged_once_and_short(tmp_path: Path) -> None:
    """The retry and cloud-check lines as the collector's own logging (oslo.log) writes
    them: oslo.log appends the exception being handled to a WARNING logged inside an
    except block, which said the reason twice (or added urllib3's pool text)."""
    port = _free_port()  # nothing listens there
    buffer = EventBuffer(str(tmp_path / "buffer"), max_items=100)
    buffer.append(['{"event_id": "e1"}'])
    buffer.close()
    log = tmp_path / "collector.log"
    config = _config(tmp_path, "retry_initial_delay_s = 0.1\nretry_max_delay_s = 0.3\n",
                     reporting_url=f"http://127.0.0.1:{port}")
    Path(config).write_text(Path(config).read_text().replace(
        "[DEFAULT]\n", f"[DEFAULT]\nlog_file = {log}\n"))
    wanted = ("WARNING collector.delivery", "WARNING collector.cloud_check")
    lines = _run_collector_until(
        config, log, lambda text: all(text.count(name) >= 2 for name in wanted)).splitlines()
    assert all(re.match(r"\d{4}-\d\d-\d\d ", line) for line in lines), lines  # one line each
    reason = f"connection refused by 127.0.0.1:{port} (is the Reporting API running there?)"
    for name, start in (("collector.delivery", f"Delivery failed (connection: {reason}); "
                                               "retrying in "),
                        ("collector.cloud_check", f"Checking cloud os-unit (GET /v1/clouds) "
                                                  f"failed ({reason}); asking again in 0.3s")):
        messages = [line.split(" [-] ", 1)[1] for line in lines if f" WARNING {name} " in line]
        assert len(messages) >= 2, lines
        for message in messages:
            assert message.startswith(start), message
            assert message.count("connection refused") == 1, message
            assert "urllib3" not in message and "Max retries" not in message, message
            assert "Error" not in message and "DeliveryRefused" not in message, message
            assert len(message) < 160, message


def test_requests_text_was_long() -> None:
    """What the line above replaces: requests' own text names urllib3's pool twice."""
    with pytest.raises(requests.ConnectionError) as caught:
        requests.post("http://127.0.0.1:1/v1/events", timeout=5)
    assert len(str(caught.value)) > 160


class _BrokenDisk(EventBuffer):
    def append(self, events_json: Any) -> None:
        raise OSError("disk on fire")

    def park(self, record: Any) -> None:
        raise OSError("disk on fire")


def test_a_broken_disk_is_logged_with_its_reason_once(tmp_path: Path) -> None:
    """The listener's buffer-write lines through oslo.log's formatter (the collector's)."""
    buffer = _BrokenDisk(str(tmp_path / "broken"), max_items=100)
    with oslo_log_lines("collector.listener") as lines:
        endpoint = NotificationEndpoint("os-unit", buffer, CollectorMetrics(), threading.Event(),
                                        threading.Event(), max_write_attempts=1,
                                        requeue_max_delay_s=0.0)
        message = {"ctxt": {}, "publisher_id": "volume.host", "event_type": "volume.create.end",
                   "payload": {"volume_id": "v-1", "tenant_id": "p-1", "status": "available",
                               "size": 1, "volume_type": "t"},
                   "metadata": {"message_id": "m-1", "timestamp": "2026-11-29 23:46:12.702142"}}
        endpoint.info([message])
    buffer.close()
    assert any("Buffer write of 1 events failed (disk on fire)" in line for line in lines), lines
    assert any("Parking failed too (disk on fire)" in line for line in lines), lines
    for line in lines:
        assert line.count("disk on fire") <= 1 and "OSError" not in line, line


def test_the_start_names_the_broker_and_the_api_without_passwords(tmp_path: Path) -> None:
    log = tmp_path / "collector.log"
    broker = f"rabbit://tally:s3cret@127.0.0.1:{_free_port()}/"  # unreachable: still named
    api = f"http://ingest:pa55@127.0.0.1:{_free_port()}"
    config = _config(tmp_path, reporting_url=api)
    Path(config).write_text(Path(config).read_text().replace(
        "transport_url = fake:\n", f"transport_url = {broker}\nlog_file = {log}\n"))
    text = _run_collector_until(config, log, lambda text: "Reporting API: " in text)
    messages = [line.split(" [-] ", 1)[1] for line in text.splitlines() if " INFO collector " in line]
    assert messages[:2] == [f"broker: {broker.replace('s3cret', '***')}",
                            f"Reporting API: {api.replace('pa55', '***')}"], messages
    assert "s3cret" not in text and "pa55" not in text, text
