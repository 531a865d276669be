"""tally-reporting and reporting.wsgi: startup, bad configuration, env alias."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from reporting.cmd import ConfigError
from reporting.wsgi import load_application
from tests.conftest import sqlite_copy
from tests.functional.reporting.fixtures import RunningServer, auth, start_server, write_config
from tests.functional.reporting.test_ingest_api import event


def test_server_ingests_and_serves(reporting_server: RunningServer) -> None:
    url = f"{reporting_server.base_url}/v1/events"
    response = requests.post(url, json={"events": [event(1), event(1)]}, headers=auth("ingest"),
                             timeout=30)
    assert response.status_code == 200
    assert [r["status"] for r in response.json()["results"]] == ["stored", "duplicate"]
    big = requests.post(url, data=b"x" * (10 * 1024 * 1024 + 1), headers=auth("ingest"), timeout=30)
    assert big.status_code == 413


def test_metrics_directory_is_fresh_and_removed_at_exit(tokens_file: str, tmp_path: Path,
                                                        sqlite_migrated_template: Path) -> None:
    # Process housekeeping does not depend on the backend: SQLite only.
    db_url = sqlite_copy(sqlite_migrated_template, tmp_path / "tally.sqlite")
    server = start_server(write_config(tmp_path / "r.conf", db_url, tokens_file), tmp_path / "log")
    try:
        match = re.search(r"prometheus multiprocess directory (\S+)", server.log.read_text())
        assert match is not None
        directory = Path(match.group(1))
        assert directory.is_dir()
        requests.post(f"{server.base_url}/v1/events", json={"events": [event(1)]},
                      headers=auth("ingest"), timeout=30)
        assert list(directory.glob("*.db"))  # the workers write their samples there
    finally:
        server.stop()
    assert server.process.returncode == 0
    assert not directory.exists()


def run_serve(config: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "reporting.cmd.serve", "--config-file", str(config)],
        capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})},
    )


@pytest.mark.parametrize(
    ("extra", "env", "message"),
    [
        ({"api": {"tokens_file": "/nonexistent/tokens.yaml"}}, {}, "tokens_file"),
        ({"database": {"connection": "nosuchdialect://x"}}, {}, "nosuchdialect"),
        ({"database": {"connection": "not a url"}}, {}, "URL"),
        ({"api": {"workers": "two"}}, {}, "[api] workers"),
        ({"api": {"auth_strategy": "magic"}}, {}, "[api] auth_strategy"),
        ({}, {"TALLY_INGEST_REQUIRE_SIZE_SCHEMA": "perhaps"}, "TALLY_INGEST_REQUIRE_SIZE_SCHEMA"),
    ],
)
def test_bad_configuration_exits_with_one_line(
    tmp_path: Path, tokens_file: str, extra: dict[str, dict[str, str]], env: dict[str, str],
    message: str,
) -> None:
    config = write_config(tmp_path / "r.conf", f"sqlite:///{tmp_path}/x.db", tokens_file, **extra)
    result = run_serve(config, env)
    assert result.returncode == 2
    assert result.stderr.startswith("tally-reporting: configuration error: "), result.stderr
    assert message in result.stderr
    lines = [line for line in result.stderr.splitlines() if "configuration error" in line]
    assert len(lines) == 1 and "Traceback" not in result.stderr


def test_missing_config_file_is_refused(tmp_path: Path) -> None:
    result = run_serve(tmp_path / "absent.conf")
    assert result.returncode == 2
    assert "absent.conf" in result.stderr and "Traceback" not in result.stderr


def test_wsgi_application_reads_tally_config_file(
    db_url: str, tokens_file: str, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "r.conf", db_url, tokens_file)
    app = load_application({"TALLY_CONFIG_FILE": str(config)})
    client = app.test_client()
    response = client.post("/v1/events", json={"events": [event(1)]}, headers=auth("ingest"))
    assert response.get_json()["stored"] == 1
    app.extensions["tally.engine"].dispose()
    with pytest.raises(ConfigError, match="TALLY_CONFIG_FILE"):
        load_application({})


@pytest.mark.parametrize(("value", "strict"), [("true", True), ("1", True), ("false", False),
                                               ("off", False)])
def test_env_alias_switches_strict_mode(
    db_url: str, tokens_file: str, tmp_path: Path, value: str, strict: bool
) -> None:
    config = write_config(tmp_path / "r.conf", db_url, tokens_file)
    app = load_application({"TALLY_CONFIG_FILE": str(config),
                            "TALLY_INGEST_REQUIRE_SIZE_SCHEMA": value})
    share = event(1, resource_type="share", event_type="share.create", payload={"size": {"gb": 1}})
    body = app.test_client().post("/v1/events", json={"events": [share]},
                                  headers=auth("ingest")).get_json()
    assert body["results"][0]["status"] == ("rejected" if strict else "stored")
    app.extensions["tally.engine"].dispose()
