"""Every Tally command and server logs through the same oslo.log setup
(``tally_common.logs``): oslo.log's options in its configuration, its formatter on every
line, the log file when one is set; stderr for the commands whose stdout is their
result (tally-sync, tally-manage), stdout for the servers."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from oslo_log import formatters

from tests.unit.reporting.fixtures import tokens_file  # noqa: F401 (fixture)


def _root_handlers() -> list[logging.Handler]:
    return [handler for handler in logging.getLogger().handlers
            if not type(handler).__module__.startswith("_pytest")]


def _reporting_conf(tmp_path: Path, tokens: str, default: str = "") -> Path:
    path = tmp_path / "tally.conf"
    path.write_text(f"[DEFAULT]\n{default}\n"
                    f"[database]\nconnection = sqlite:///{tmp_path / 'tally.sqlite'}\n"
                    f"[api]\ntokens_file = {tokens}\nbind = 127.0.0.1:0\n"
                    "[sync]\napi_url = http://127.0.0.1:1\nauth_strategy = noauth\n")
    return path


def _run_manage(config: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    from reporting.cmd import manage

    return manage.main(["--config-file", str(config), "db", "upgrade"])


def _run_sync(config: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    from reporting.cmd import sync

    return sync.main(["--config-file", str(config), "c1"])  # the API does not answer: 1


def _run_reporting(config: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    from reporting.cmd import serve

    class NoServer:
        def run(self) -> None:
            pass

    monkeypatch.setattr(serve, "_gunicorn_app", lambda conf, app: NoServer())
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(config.parent))  # main sets its own
    return serve.main(["--config-file", str(config)])


COMMANDS: dict[str, tuple[Callable[[Path, pytest.MonkeyPatch], int], int, str]] = {
    # command: (run, exit status, where its lines go without a log file)
    "tally-manage": (_run_manage, 0, "stderr"),
    "tally-sync": (_run_sync, 1, "stderr"),
    "tally-reporting": (_run_reporting, 0, "stdout"),
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_the_reporting_commands_log_through_oslo_log(
        command: str, tmp_path: Path, tokens_file: str,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run, status, stream = COMMANDS[command]
    assert run(_reporting_conf(tmp_path, tokens_file), monkeypatch) == status
    (handler,) = _root_handlers()
    assert isinstance(handler.formatter, formatters.ContextFormatter)
    assert getattr(handler, "stream", None) is getattr(sys, stream)
    assert "unknown option" not in capsys.readouterr().err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_oslo_logs_options_are_the_commands_own(
        command: str, tmp_path: Path, tokens_file: str,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """[DEFAULT] debug and log_file are known options (no warning) and take effect."""
    log_file = tmp_path / f"{command}.log"
    config = _reporting_conf(tmp_path, tokens_file, f"debug = true\nlog_file = {log_file}")
    run, status, _ = COMMANDS[command]
    assert run(config, monkeypatch) == status
    handlers = _root_handlers()
    assert [Path(getattr(h, "baseFilename", "")) for h in handlers] == [log_file]
    assert logging.getLogger().level == logging.DEBUG
    assert "unknown option" not in capsys.readouterr().err


def test_tally_simcloud_logs_through_oslo_log(capsys: pytest.CaptureFixture[str]) -> None:
    from simcloud import cmd

    assert cmd.main(["drive", "--sim-url", "http://127.0.0.1:1"]) == 1
    (handler,) = _root_handlers()
    assert isinstance(handler.formatter, formatters.ContextFormatter)
    assert getattr(handler, "stream", None) is sys.stdout
    assert logging.getLogger().level == logging.INFO


def test_the_demo_logs_errors_only_on_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    from simcloud import demo

    started: dict[str, Any] = {}

    class Stop(Exception):
        pass

    def prepare(self: Any) -> None:
        started["handlers"] = _root_handlers()
        raise Stop

    monkeypatch.setattr(demo.Demo, "prepare_workdir", prepare)
    with pytest.raises(Stop):
        demo.main(["--workdir", "unused"])
    (handler,) = started["handlers"]
    assert isinstance(handler.formatter, formatters.ContextFormatter)
    assert getattr(handler, "stream", None) is sys.stderr
    assert logging.getLogger().level == logging.ERROR
