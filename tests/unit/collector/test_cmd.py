"""tally-collector: a bad configuration is refused with one clear line and a non-zero
exit; a good one starts with its start-up heap frozen and stops on SIGTERM."""

from __future__ import annotations

import gc
import signal
from pathlib import Path

import pytest

from collector import cmd, service


def _config(tmp_path: Path, **collector: str) -> str:
    values = {"cloud": "os-unit", "buffer_dir": str(tmp_path / "buffer"),
              "reporting_url": "http://127.0.0.1:1", "metrics_bind": "",
              "auth_strategy": "noauth"}
    values.update(collector)
    lines = ["[DEFAULT]", "transport_url = fake:", "[collector]"]
    lines += [f"{key} = {value}" for key, value in values.items() if value is not None]
    path = tmp_path / "collector.conf"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str]:
    code = cmd.main(args)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return code, err[0]


@pytest.fixture(autouse=True)
def _no_env_cloud(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TALLY_OSC_CLOUD", raising=False)


def test_missing_cloud(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _run(capsys, ["--config-file", _config(tmp_path, cloud="")])
    assert code != 0
    assert "no cloud name" in line and "TALLY_OSC_CLOUD" in line


def test_unwritable_buffer_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    code, line = _run(capsys, ["--config-file", _config(tmp_path, buffer_dir=str(tmp_path / "file" / "b"))])
    assert code != 0 and "buffer_dir" in line and "not a writable directory" in line


def test_missing_buffer_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _run(capsys, ["--config-file", _config(tmp_path, buffer_dir="")])
    assert code != 0 and "buffer_dir is not set" in line


@pytest.mark.parametrize("url", ["localhost:8779", "http://", "http://host:port", ""])
def test_malformed_reporting_url(tmp_path: Path, capsys: pytest.CaptureFixture[str], url: str) -> None:
    code, line = _run(capsys, ["--config-file", _config(tmp_path, reporting_url=url)])
    assert code != 0 and "reporting_url" in line


def test_unknown_option_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _run(capsys, ["--config-file", _config(tmp_path, buffer_sync="sometimes")])
    assert code != 0 and "buffer_sync" in line


def test_batch_size_above_the_api_limit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _run(capsys, ["--config-file", _config(tmp_path, batch_size="1001")])
    assert code != 0 and "batch_size" in line


def test_bad_metrics_bind(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("nowhere", "127.0.0.1:\u00b2"):
        code, line = _run(capsys, ["--config-file", _config(tmp_path, metrics_bind=bad)])
        assert code != 0 and "metrics_bind" in line, bad


def test_unreadable_token_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _run(capsys, ["--config-file", _config(tmp_path, token_file=str(tmp_path / "nope"))])
    assert code != 0 and "token_file" in line


def test_missing_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _run(capsys, ["--config-file", str(tmp_path / "absent.conf")])
    assert code != 0 and "absent.conf" in line


def test_malformed_transport_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _config(tmp_path)
    text = Path(path).read_text().replace("transport_url = fake:", "transport_url = rabbit//nohost")
    Path(path).write_text(text)
    code, line = _run(capsys, ["--config-file", path])
    assert code != 0 and "transport" in line.lower()


def test_start_up_objects_are_frozen_before_consuming(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Full garbage collections while consuming do not traverse what start-up built."""
    seen: dict[str, object] = {}

    class RecordingCollector:
        def __init__(self, conf: object) -> None:
            pass

        def start(self) -> None:
            seen["frozen"] = gc.get_freeze_count()
            signal.raise_signal(signal.SIGTERM)  # as an operator stopping it

        def stop(self) -> None:
            seen["stopped"] = True

    monkeypatch.setattr(service, "Collector", RecordingCollector)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    gc.unfreeze()
    try:
        assert cmd.main(["--config-file", _config(tmp_path)]) == 0
    finally:
        gc.unfreeze()  # the test process keeps collecting normally
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert seen["stopped"] is True
    assert isinstance(seen["frozen"], int) and seen["frozen"] > 1000


def test_a_slash_in_the_cloud_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, line = _run(capsys, ["--config-file", _config(tmp_path, cloud="eu/prod")])
    assert code != 0 and "'/'" in line and "cloud" in line


def test_an_override_stays_in_its_own_configuration() -> None:
    # Two ConfigOpts of one process (the tests build many) must not share overrides.
    from oslo_config import cfg

    from collector import opts

    first, second = cfg.ConfigOpts(), cfg.ConfigOpts()
    for conf in (first, second):
        opts.register_opts(conf)
        conf([], project="tally-unit-test", default_config_files=[])
    first.set_override("cloud", "only-here", group="collector")
    assert second.collector.cloud != "only-here"
