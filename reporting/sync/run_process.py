"""The processes sync runs work in, seen from the serving process.

Why a process: a run must change nothing process-wide under the requests a worker
keeps serving (it turns the garbage collector off while it holds one object per
resource), and a run that overruns must really stop (a thread blocked inside a
client library cannot be stopped, only abandoned).  A process can be killed, and
whatever it did to itself ends with it.  The serving process keeps the lease and the
``sync_runs`` row (``reporting.sync.runner``), so a killed run is still recorded as
failed and its lease released.

Starting an interpreter with Tally's imports costs most of a second, more than a
small cloud's whole run, so a process that answered is kept idle for the next run
(``RunProcesses``); concurrent runs of different clouds each get one.  One that
overran is killed, never reused.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import select
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from typing import IO, Any

from oslo_config import cfg

import reporting
from reporting.db import writes
from reporting.sync import child_metrics
from reporting.sync.child_job import Job, Outcome, snapshot
from reporting.sync.clouds import CloudEntry
from reporting.sync.reconcile import over_budget
from reporting.sync.stats import failed_stats

LOG = logging.getLogger(__name__)

# How long past the run's deadline its process may take to hand back its outcome
# (the batch being booked, the stats) before it is killed.  The child also arms an
# alarm of its own at twice this, so it ends even if this process dies first.
KILL_GRACE_S = 5.0
CHILD_MODULE = "reporting.sync.child"


def child_environment() -> dict[str, str]:
    env = dict(os.environ)
    # The child counts in its own registry and hands the samples back
    # (reporting.sync.child_metrics): it never writes the workers' metric files.
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    # The child imports this very code, installed or run from a checkout.
    source_root = str(Path(reporting.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source_root, env.get("PYTHONPATH")]))
    return env


def start_child() -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", CHILD_MODULE], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=child_environment())


def _read_line(pipe: IO[bytes], until: float) -> bytes | None:
    """One line from ``pipe`` before ``until`` (time.monotonic()); b"" at end of file,
    None when time ran out first."""
    chunks: list[bytes] = []
    fd = pipe.fileno()
    while True:
        ready, _, _ = select.select([fd], [], [], max(until - time.monotonic(), 0.0))
        if not ready:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b""
        chunks.append(chunk)
        if chunk.endswith(b"\n"):
            return b"".join(chunks)


Idle = tuple[subprocess.Popen[bytes], float]  # a run process, idle since (monotonic)
# An idle process older than this is let go rather than reused: it may be about to end
# by itself (reporting.sync.child.IDLE_EXIT_S, 120 s).
REUSE_WITHIN_S = 60.0


def _let_go(idle: list[Idle]) -> None:
    """Close the idle children's stdin: each exits when it reads the end."""
    for child, _ in idle:
        if child.stdin is not None:
            child.stdin.close()


class RunProcesses:
    """The run processes of one serving process: idle ones kept for the next run."""

    def __init__(self) -> None:
        self._idle: list[Idle] = []
        self._lock = threading.Lock()
        self._owner = os.getpid()
        weakref.finalize(self, _let_go, self._idle)

    def idle_pids(self) -> list[int]:
        with self._lock:
            return [child.pid for child, _ in self._idle]

    def close(self) -> None:
        """Let every idle run process go (each ends when it reads the end of its stdin)."""
        with self._lock:
            _let_go(self._idle)
            self._idle.clear()

    def _take(self) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._owner != os.getpid():  # forked (a gunicorn worker): not ours
                self._idle.clear()
                self._owner = os.getpid()
            now = time.monotonic()
            while self._idle:
                child, since = self._idle.pop()
                if now - since < REUSE_WITHIN_S and child.poll() is None:
                    return child
                _let_go([(child, since)])
        return start_child()

    def _give_back(self, child: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._idle.append((child, time.monotonic()))

    def _hand(self, job: Job) -> subprocess.Popen[bytes]:
        """A run process that has the job; a fresh one if the idle one is gone."""
        for attempt in (1, 2):
            child = self._take() if attempt == 1 else start_child()
            assert child.stdin is not None
            try:
                child.stdin.write(job.to_json() + b"\n")
                child.stdin.flush()
                return child
            except OSError:  # it ended between two runs
                child.wait()
        raise RuntimeError("no run process would take the job")

    def run(self, conf: cfg.ConfigOpts, entry: CloudEntry, run_id: str, at: dt.datetime,
            deadline: float, full: bool = False) -> dict[str, Any]:
        """The stats of run ``run_id`` of ``entry``, done in a run process that is
        killed ``KILL_GRACE_S`` after ``deadline`` (``time.monotonic()``)."""
        if writes.private_to_process(conf.database.connection):
            return failed_stats(["a sync run needs a database its own process can open; "
                                 "[database] connection names an in-memory SQLite database"])
        child = self._hand(Job(snapshot(conf), entry, run_id, at, deadline, full))
        assert child.stdout is not None
        line = _read_line(child.stdout, deadline + KILL_GRACE_S)
        if line is None:
            child.kill()
            child.wait()
            budget_s = float(conf.sync.budget_s)
            LOG.warning("sync run %s of %s did not end within its budget of %g s; its "
                        "process (pid %s) was killed", run_id, entry.name, budget_s, child.pid)
            return failed_stats([f"{over_budget(budget_s)}: its process was stopped"])
        if not line:
            status = child.wait()
            LOG.warning("sync run %s of %s: its process (pid %s) exited with status %s",
                        run_id, entry.name, child.pid, status)
            return failed_stats([f"internal error: the run's process exited with status "
                                 f"{status}"])
        self._give_back(child)
        outcome = Outcome.from_json(line)
        child_metrics.add(outcome.metrics)
        return outcome.stats
