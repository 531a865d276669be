"""Real nova from PyPI, in a virtualenv of its own, driven by tests/real/nova_driver.py.

nova pins its own dependencies (oslo.*, SQLAlchemy, eventlet...), so it never enters
Tally's virtualenv: a session fixture builds one under the cache directory
(``TALLY_TEST_CACHE_DIR``, default ``~/.cache/tally-tests``), keyed by the nova
series, the Python version and the requirements file, and later runs reuse it.  The
driver runs in that virtualenv's python; the test talks to it over JSON lines.

Nothing here skips: a nova that cannot be installed or started FAILS the tier, with
pip's or nova's own output in the failure.
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "nova-requirements.txt"
DRIVER = HERE / "nova_driver.py"
# The first install downloads and builds ~250 packages; a later run only checks.
INSTALL_TIMEOUT_S = 3600
# nova's services, placement and the API come up in tens of seconds on a quiet machine.
START_TIMEOUT_S = 600
COMMAND_TIMEOUT_S = 300


def cache_dir() -> Path:
    named = os.environ.get("TALLY_TEST_CACHE_DIR")
    return Path(named) if named else Path.home() / ".cache" / "tally-tests"


def venv_path() -> Path:
    """Where the nova virtualenv of this Python and requirements file lives."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:10]
    version = f"py{sys.version_info.major}.{sys.version_info.minor}"
    return cache_dir() / f"nova-34-{version}-{digest}"


def _tail(path: Path, size: int = 6000) -> str:
    with contextlib.suppress(OSError):
        return path.read_text(errors="replace")[-size:]
    return "(no output)"


def build_venv(venv: Path, log: Path, requirements: Path = REQUIREMENTS,
               pip_args: tuple[str, ...] = ()) -> None:
    """A fresh virtualenv at ``venv`` with ``requirements``; pytest.fail (never a skip)
    with pip's output when it cannot be built."""
    shutil.rmtree(venv, ignore_errors=True)
    base = getattr(sys, "_base_executable", sys.executable)
    with open(log, "w") as out:
        steps = [
            [base, "-m", "venv", str(venv)],
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *pip_args,
             "-r", str(requirements)],
        ]
        for argv in steps:
            out.write(f"$ {' '.join(argv)}\n")
            out.flush()
            try:
                done = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=INSTALL_TIMEOUT_S, check=False)
            except subprocess.TimeoutExpired:
                pytest.fail(f"installing nova into {venv} took over {INSTALL_TIMEOUT_S}s:\n"
                            f"{_tail(log)}")
            if done.returncode != 0:
                pytest.fail(f"installing nova into {venv} failed ({done.returncode}):\n"
                            f"{_tail(log)}")


@pytest.fixture(scope="session")
def nova_python() -> Path:
    """The python of the nova virtualenv, built on first use (one builder at a time)."""
    venv = venv_path()
    venv.parent.mkdir(parents=True, exist_ok=True)
    marker = venv / ".tally-complete"
    log = venv.parent / f"{venv.name}.log"
    with open(venv.parent / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            build_venv(venv, log)
            marker.write_text(REQUIREMENTS.read_text())
    python = venv / "bin" / "python"
    check = subprocess.run(
        [str(python), "-c", "import nova.tests.functional.integrated_helpers, placement"],
        capture_output=True, text=True, timeout=300, check=False)
    if check.returncode != 0:
        pytest.fail(f"the nova virtualenv {venv} cannot import nova's functional fixtures "
                    f"(remove it to rebuild):\n{check.stderr[-4000:]}")
    return python


class RealNova:
    """One nova_driver.py process: nova's services, its API on a loopback port."""

    def __init__(self, python: Path, workdir: Path, transport_url: str, identity_url: str,
                 exchange: str, keystone: dict[str, Any] | None = None) -> None:
        """``identity_url``: the simulated cloud's keystone, in front of a stubbed
        keystonemiddleware; or ``keystone`` (``auth_url`` and the ``service``,
        ``admin`` and ``member`` accounts): a real one, through keystonemiddleware."""
        self.log = workdir / "nova.log"
        where = ["--identity-url", identity_url]
        if keystone is not None:
            settings = workdir / "nova-keystone.json"
            settings.write_text(json.dumps(keystone))
            where = ["--keystone", str(settings)]
        self._stderr = open(self.log, "w")  # noqa: SIM115 - kept by the process
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL"))}
        self.proc = subprocess.Popen(
            [str(python), str(DRIVER), "--transport-url", transport_url, *where,
             "--exchange", exchange],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            text=True, env=env, cwd=workdir)
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._next(START_TIMEOUT_S, "nova's services to start")
        if "ready" not in ready:
            pytest.fail(f"nova did not start: {ready}\n{_tail(self.log)}")
        self.compute_url: str = ready["ready"]["compute_url"]
        self.project_id: str = ready["ready"]["project_id"]

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _next(self, timeout: float, what: str) -> dict[str, Any]:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"no answer from nova after {timeout}s waiting for {what}:\n"
                        f"{_tail(self.log)}")
        if line is None:
            self.proc.wait(30)
            pytest.fail(f"nova exited ({self.proc.returncode}) waiting for {what}:\n"
                        f"{_tail(self.log)}")
        answer: dict[str, Any] = json.loads(line)
        if "fatal" in answer:
            pytest.fail(f"nova failed waiting for {what}:\n{answer['fatal']}")
        return answer

    def call(self, op: str, **args: Any) -> Any:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": op, **args}) + "\n")
        self.proc.stdin.flush()
        answer = self._next(COMMAND_TIMEOUT_S, f"{op} {args}")
        if "error" in answer:
            raise AssertionError(f"nova refused {op} {args}: {answer['error']}\n"
                                 f"{_tail(self.log, 3000)}")
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


@pytest.fixture
def real_nova_factory(nova_python: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[RealNova] = []

    def start(transport_url: str, identity_url: str, exchange: str,
              keystone: dict[str, Any] | None = None) -> RealNova:
        nova = RealNova(nova_python, tmp_path, transport_url, identity_url, exchange, keystone)
        started.append(nova)
        return nova

    try:
        yield start
    finally:
        for nova in started:
            nova.stop()
