"""Helpers of the reporting suites that need no database: the test tokens, a
reporting config file, and a real ``tally-reporting`` process.  tests/unit/reporting
uses them as they are; tests/functional/reporting/fixtures.py adds the backend
fixtures (SQLite and PostgreSQL) on top.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

# One bearer token per role; ``auth(role)`` builds the header.
TOKENS = {"ingest": "tok-ingest", "read": "tok-read", "admin": "tok-admin"}


def auth(role: str) -> dict[str, str]:
    """Authorization header of the test token holding ``role``."""
    return {"Authorization": f"Bearer {TOKENS[role]}"}


@pytest.fixture
def tokens_file(tmp_path: Path) -> str:
    """A tokens file granting TOKENS."""
    path = tmp_path / "tokens.yaml"
    path.write_text(yaml.safe_dump({token: role for role, token in TOKENS.items()}))
    return str(path)


class RunningServer:
    """A real ``tally-reporting`` process (gunicorn inside) started on a free port."""

    def __init__(self, process: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
        self.process = process
        self.base_url = base_url
        self.log = log

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def write_config(path: Path, url: str, tokens_file: str, **extra: dict[str, Any]) -> Path:
    """A reporting config file: ``url``, token auth, bind 127.0.0.1:0, plus ``extra`` groups."""
    groups: dict[str, dict[str, Any]] = {
        "database": {"connection": url},
        "api": {"auth_strategy": "token", "tokens_file": tokens_file, "bind": "127.0.0.1:0"},
    }
    for group, values in extra.items():
        groups.setdefault(group, {}).update(values)
    path.write_text(
        "".join(
            f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())
            for group, values in groups.items()
        )
    )
    return path


def start_server(config: Path, log: Path, env: dict[str, str] | None = None) -> RunningServer:
    """Start ``tally-reporting --config-file config``; returns once it listens."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "reporting.cmd.serve", "--config-file", str(config)],
            stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})},
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        match = re.search(rb"Listening at: (http://[\d.]+:\d+)", log.read_bytes())
        if match:
            return RunningServer(process, match.group(1).decode(), log)
        if process.poll() is not None:
            break
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"tally-reporting did not start: {log.read_text(errors='replace')}")
