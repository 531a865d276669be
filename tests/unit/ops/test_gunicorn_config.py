"""deploy/gunicorn/tally.conf.py serves reporting.wsgi:application with the
settings of the Tally configuration, like tally-reporting does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.unit.ops import catalogue

GUNICORN_CONF = catalogue.REPO_ROOT / "deploy" / "gunicorn" / "tally.conf.py"

# Loads the gunicorn config as gunicorn does (a Python file executed at start), in a
# child process: it sets PROMETHEUS_MULTIPROC_DIR, which must not leak into the
# test process.
_PROBE = """
import json, os, runpy, sys
settings = runpy.run_path(sys.argv[1])
metrics_dir = os.environ["PROMETHEUS_MULTIPROC_DIR"]
existed = os.path.isdir(metrics_dir)
settings["on_exit"](None)
print(json.dumps({
    "wsgi_app": settings["wsgi_app"], "bind": settings["bind"],
    "workers": settings["workers"], "threads": settings["threads"],
    "timeout": settings["timeout"], "worker_class": settings["worker_class"],
    "metrics_dir": metrics_dir, "existed": existed,
    "exists_after_exit": os.path.isdir(metrics_dir),
    "has_child_exit": callable(settings.get("child_exit")),
}))
"""


def _load(tmp_path: Path, conf_text: str, metrics_dir: str | None) -> dict[str, object]:
    conf = tmp_path / "tally.conf"
    conf.write_text(conf_text)
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["TALLY_CONFIG_FILE"] = str(conf)
    if metrics_dir is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, str(GUNICORN_CONF)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_settings_come_from_the_tally_configuration(tmp_path: Path) -> None:
    loaded = _load(tmp_path, "[api]\nbind = 127.0.0.1:18779\nworkers = 3\nthreads = 5\n"
                   "timeout = 200\nauth_strategy = noauth\n", None)
    assert loaded["wsgi_app"] == "reporting.wsgi:application"
    assert loaded["bind"] == ["127.0.0.1:18779"]
    assert (loaded["workers"], loaded["threads"], loaded["timeout"]) == (3, 5, 200)
    assert loaded["worker_class"] == "gthread"
    assert loaded["has_child_exit"]
    # A metrics directory of its own, removed when gunicorn exits.
    assert loaded["existed"] and not loaded["exists_after_exit"]


def test_a_given_metrics_directory_is_used_and_kept(tmp_path: Path) -> None:
    given = tmp_path / "metrics"
    given.mkdir()
    loaded = _load(tmp_path, "[api]\nauth_strategy = noauth\n", str(given))
    assert loaded["metrics_dir"] == str(given)
    assert loaded["exists_after_exit"]
    assert loaded["bind"] == ["127.0.0.1:8779"]


def test_without_a_configuration_file_it_refuses(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TALLY_CONFIG_FILE"}
    result = subprocess.run(
        [sys.executable, "-c", "import runpy, sys; runpy.run_path(sys.argv[1])",
         str(GUNICORN_CONF)],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False,
    )
    assert result.returncode != 0
    assert "TALLY_CONFIG_FILE must name the Tally configuration file" in result.stderr


def test_gunicorn_serves_the_api_with_it(tmp_path: Path) -> None:
    conf = tmp_path / "tally.conf"
    conf.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/tally.sqlite\n"
                    "[api]\nbind = 127.0.0.1:0\nworkers = 2\nauth_strategy = noauth\n")
    env = {k: v for k, v in os.environ.items() if k != "PROMETHEUS_MULTIPROC_DIR"}
    env["TALLY_CONFIG_FILE"] = str(conf)
    # gunicorn imports its config file: no __pycache__ beside it in the checkout, which
    # the tests reading deploy/ would find (parallel workers run them at any moment).
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF)],
        stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
    )
    # A server that never says where it listens must not hang the suite.
    watchdog = threading.Timer(120, server.kill)
    watchdog.start()
    try:
        assert server.stderr is not None
        port = None
        for line in server.stderr:  # gunicorn logs the port it was given
            if "Listening at: http://127.0.0.1:" in line:
                port = int(line.rsplit(":", 1)[1].split()[0])
                break
        assert port is not None, "gunicorn did not start"
        health = _get(f"http://127.0.0.1:{port}/healthz")
        assert health == (200, {"status": "ok"})
        # No migrations were run: /readyz must say so rather than claim readiness.
        status, body = _get(f"http://127.0.0.1:{port}/readyz")
        assert status == 503 and body["error"]["code"] == "not_ready"
    finally:
        watchdog.cancel()
        server.terminate()
        server.wait(timeout=60)
        if server.stderr is not None:
            server.stderr.close()


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - loopback
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_default_worker_timeout_outlasts_a_sync_run() -> None:
    # The sync route is held open for [sync] budget_s + 15 s; a gunicorn worker
    # silent for [api] timeout is killed.
    groups = catalogue.component_opts("reporting")
    api = {opt.name: opt.default for opt in groups["api"]}
    sync = {opt.name: opt.default for opt in groups["sync"]}
    assert api["timeout"] > sync["budget_s"] + 15
