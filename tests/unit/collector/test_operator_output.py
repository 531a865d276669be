"""tally-collector as an operator meets it: a misspelt option is refused, an unknown
option of oslo.messaging's sections is warned about, no eventlet notice on start,
``--help`` or an error, and retry lines that say the reason once."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import requests
from oslo_config import cfg

from collector import cmd
from collector.buffer import EventBuffer
from collector.delivery import Delivery
from collector.metrics import CollectorMetrics
from mapping.config_check import check_config_files

BIN = Path(sys.executable).parent


def _config(tmp_path: Path, extra: str = "", **collector: str) -> str:
    values = {"cloud": "os-unit", "buffer_dir": str(tmp_path / "buffer"),
              "reporting_url": "http://127.0.0.1:1", "metrics_bind": ""}
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


def test_an_unknown_rabbit_option_is_a_warning(tmp_path: Path) -> None:
    """oslo.messaging registers [oslo_messaging_rabbit] when its driver loads, and drops
    options between releases: an unknown one there is reported, not fatal."""
    import oslo_messaging

    path = tmp_path / "collector.conf"
    path.write_text("[DEFAULT]\ntransport_url = rabbit://guest:guest@127.0.0.1:5672/\n"
                    "[oslo_messaging_rabbit]\nheartbeat_timeout_threshold = 10\n"
                    "rabbit_qos_prefech_count = 5\n")
    conf = cfg.ConfigOpts()
    conf(["--config-file", str(path)], default_config_files=[], default_config_dirs=[])
    transport = oslo_messaging.get_notification_transport(conf)
    try:
        warnings = check_config_files(conf)
    finally:
        transport.cleanup()
    assert warnings == [f"WARNING: unknown option [oslo_messaging_rabbit] rabbit_qos_prefech_count "
                        f"in {path}: not an option of oslo.messaging as installed; it is ignored"]


@pytest.mark.parametrize("args", [["tally-collector", "--help"],
                                  ["tally-collector", "--config-file", "/nonexistent"],
                                  ["tally-simcloud", "--help"],
                                  ["tally-simcloud", "serve", "--bind", "nowhere"]])
def test_no_eventlet_notice(args: list[str]) -> None:
    result = subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True,
                            timeout=120)
    assert "Eventlet is deprecated" not in result.stderr
    assert "Warning" not in result.stderr, result.stderr


def test_a_connection_failure_is_logged_once_and_short(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    buffer = EventBuffer(str(tmp_path / "buffer"), max_items=100)
    buffer.append(['{"event_id": "e1"}'])
    delivery = Delivery("http://127.0.0.1:1/v1/events", None, buffer, CollectorMetrics(),
                        initial_delay=5, max_delay=5, idle_poll=0.01)
    stop, written = threading.Event(), threading.Event()
    with caplog.at_level(logging.WARNING, logger="collector.delivery"):
        thread = threading.Thread(target=delivery.run, args=(stop, written))
        thread.start()
        for _ in range(500):
            if caplog.records:
                break
            stop.wait(0.01)
        stop.set()
        written.set()
        thread.join(10)
    buffer.close()
    line = caplog.records[0].getMessage()
    assert line.startswith("Delivery failed (connection: connection refused by 127.0.0.1:1 "
                           "(is the Reporting API running there?)); retrying in"), line
    assert "urllib3" not in line and "Max retries" not in line and len(line) < 160


def test_requests_text_was_long() -> None:
    """What the line above replaces: requests' own text names urllib3's pool twice."""
    with pytest.raises(requests.ConnectionError) as caught:
        requests.post("http://127.0.0.1:1/v1/events", timeout=5)
    assert len(str(caught.value)) > 160
