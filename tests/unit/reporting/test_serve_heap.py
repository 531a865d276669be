"""tally-reporting freezes what start-up built before gunicorn forks its workers, and
each worker collects cyclic garbage less often."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
from flask import Flask

from reporting.cmd import serve
from tests.unit.reporting.fixtures import write_config


def test_the_start_up_heap_is_frozen_before_the_workers_fork(
        tmp_path: Path, tokens_file: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, int] = {}

    class RecordingServer:
        def run(self) -> None:
            seen["frozen"] = gc.get_freeze_count()

    monkeypatch.setattr(serve, "_gunicorn_app", lambda conf, app: RecordingServer())
    # main points prometheus_client at a directory of its own; undone after the test
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    config = write_config(tmp_path / "reporting.conf", f"sqlite:///{tmp_path / 'tally.db'}",
                          tokens_file)
    gc.unfreeze()
    try:
        assert serve.main(["--config-file", str(config)]) == 0
    finally:
        gc.unfreeze()  # the test process keeps collecting normally
    assert seen["frozen"] > 1000


def test_main_puts_back_the_metrics_directory_it_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A refused start leaves no removed directory in the environment: processes a
    caller starts afterwards (a collector, a simulated cloud) would fail to write
    their metrics there."""
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    config = tmp_path / "reporting.conf"
    config.write_text("[database]\nconection = sqlite://\n")
    assert serve.main(["--config-file", str(config)]) == 2
    assert "PROMETHEUS_MULTIPROC_DIR" not in os.environ


def test_each_worker_collects_cyclic_garbage_less_often() -> None:
    conf = SimpleNamespace(api=SimpleNamespace(bind="127.0.0.1:0", workers=1, threads=1,
                                               timeout=30))
    application = serve._gunicorn_app(conf, Flask("reporting"))
    before = gc.get_threshold()
    try:
        application.cfg.post_fork(None, None)  # what gunicorn calls in a new worker
        assert gc.get_threshold()[0] == serve.GC_THRESHOLD > 10 * before[0]
    finally:
        gc.set_threshold(*before)
