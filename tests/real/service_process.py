"""A real OpenStack service in a virtualenv of its own, driven over JSON lines.

Each service of the tier (nova, glance, cinder) pins its own dependencies, so it never
enters Tally's virtualenv: ``service_python`` builds one under the cache directory
(``TALLY_TEST_CACHE_DIR``, default ``~/.cache/tally-tests``), keyed by the service's
series, the Python version and its requirements file, once per machine (one builder at
a time), and later runs reuse it.  The service's driver script (``tests/real/*_driver.py``)
runs in that virtualenv's python and speaks one JSON object per line: first
``{"ready": {...}}`` (or ``{"fatal": ...}``), then per command ``{"ok": ...}`` or
``{"error": ...}``.

Nothing here skips: a service that cannot be installed or started FAILS the test, with
the installer's or the service's own output in the failure.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.service_venv import CONSTRAINTS, build_steps

# The first install downloads and builds a few hundred packages; a later run only checks.
INSTALL_TIMEOUT_S = 3600


def cache_dir() -> Path:
    named = os.environ.get("TALLY_TEST_CACHE_DIR")
    return Path(named) if named else Path.home() / ".cache" / "tally-tests"


def venv_path(series: str, requirements: Path) -> Path:
    """Where the virtualenv of ``series`` (e.g. ``glance-33``), this Python and this
    requirements file lives."""
    digest = hashlib.sha256(requirements.read_bytes() + CONSTRAINTS.read_bytes()
                            + b"uv").hexdigest()[:10]
    version = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return cache_dir() / f"{series}-{version}-{digest}"


def tail(path: Path, size: int = 6000) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-size:]
    return "(no output)"


def build_venv(venv: Path, log: Path, requirements: Path, pip_args: tuple[str, ...] = (),
               service: str = "nova") -> None:
    """A fresh virtualenv at ``venv`` with ``requirements`` (``tests.service_venv``);
    pytest.fail (never a skip) with the installer's output when it cannot be built."""
    shutil.rmtree(venv, ignore_errors=True)
    with open(log, "w") as out:
        for argv in build_steps(venv, *pip_args, "-r", str(requirements)):
            out.write(f"$ {' '.join(argv)}\n")
            out.flush()
            try:
                done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=INSTALL_TIMEOUT_S, check=False)
            except subprocess.TimeoutExpired:
                pytest.fail(f"installing {service} into {venv} took over "
                            f"{INSTALL_TIMEOUT_S}s:\n{tail(log)}")
            if done.returncode != 0:
                pytest.fail(f"installing {service} into {venv} failed ({done.returncode}):\n"
                            f"{tail(log)}")


def service_python(service: str, venv: Path, requirements: Path, probe: str,
                   env: Mapping[str, str] | None = None) -> Path:
    """The python of ``service``'s virtualenv at ``venv``, built on first use under a
    lock; it must import ``probe`` (a module list), else the test fails."""
    venv.parent.mkdir(parents=True, exist_ok=True)
    marker = venv / ".tally-complete"
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once: one builds, one waits
        if not marker.exists():
            build_venv(venv, venv.parent / f"{venv.name}.log", requirements, service=service)
            marker.write_text(requirements.read_text())
    python = venv / "bin" / "python"
    check = subprocess.run([str(python), "-c", f"import {probe}"], capture_output=True,
                           text=True, timeout=300, check=False,
                           env={**os.environ, **(env or {})})
    if check.returncode != 0:
        pytest.fail(f"the {service} virtualenv {venv} cannot import {probe} "
                    f"(remove it to rebuild):\n{check.stderr[-4000:]}")
    return python


class ServiceProcess:
    """One driver process of ``service``: started, answered ready, then commanded."""

    def __init__(self, service: str, python: Path, driver: Path, args: Sequence[str],
                 workdir: Path, *, starting: str, start_timeout: float,
                 command_timeout: float) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.service = service
        self.log = workdir / f"{service}.log"
        self._command_timeout = command_timeout
        self._stderr = open(self.log, "w")  # noqa: SIM115 - kept by the process
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL"))}
        self.proc = subprocess.Popen(
            [str(python), str(driver), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            text=True, env=env, cwd=workdir)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        answer = self._next(start_timeout, starting)
        if "ready" not in answer:
            pytest.fail(f"{service} did not start: {answer}\n{tail(self.log)}")
        self.ready: dict[str, Any] = answer["ready"]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no answer from {self.service} after {timeout}s waiting for "
                        f"{what}:\n{tail(self.log)}")
        if line is None:
            self.proc.wait(30)
            pytest.fail(f"{self.service} exited ({self.proc.returncode}) waiting for "
                        f"{what}:\n{tail(self.log)}")
        answer: dict[str, Any] = json.loads(line)
        if "fatal" in answer:
            pytest.fail(f"{self.service} failed waiting for {what}:\n{answer['fatal']}")
        return answer

    def call(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        answer = self._next(self._command_timeout, f"{op} {args}")
        if "error" in answer:
            raise AssertionError(f"{self.service} refused {op} {args}: {answer['error']}\n"
                                 f"{tail(self.log, 3000)}")
        return answer["ok"]

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(OSError, AssertionError, pytest.fail.Exception):
                self.call("quit")
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._stderr.close()
