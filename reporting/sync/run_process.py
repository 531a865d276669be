"""Start one sync run's own process, wait for it within the run's budget, read its outcome.

Why a process: a run must change nothing process-wide under the requests a worker
keeps serving (it pauses the garbage collector while it holds one object per
resource), and a run that overruns must really stop (a thread blocked inside a
client library cannot be stopped, only abandoned).  A process can be killed, and
whatever it did to itself ends with it.  The serving process keeps the lease and the
``sync_runs`` row (``reporting.sync.runner``), so a killed run is still recorded as
failed and its lease released.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from oslo_config import cfg

import reporting
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


def _child_environment() -> dict[str, str]:
    env = dict(os.environ)
    # The child counts in its own registry and hands the samples back
    # (reporting.sync.child_metrics): it never writes the workers' metric files.
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    # The child imports this very code, installed or run from a checkout.
    source_root = str(Path(reporting.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [source_root, env.get("PYTHONPATH")]))
    return env


def _in_memory(url: str) -> bool:
    parsed = sa.engine.make_url(url)
    return parsed.get_backend_name() == "sqlite" and parsed.database in (None, "", ":memory:")


def run_in_process(conf: cfg.ConfigOpts, entry: CloudEntry, run_id: str, at: dt.datetime,
                   deadline: float) -> dict[str, Any]:
    """The stats of run ``run_id`` of ``entry``, done in a process of its own that is
    killed ``KILL_GRACE_S`` after ``deadline`` (``time.monotonic()``)."""
    budget_s = float(conf.sync.budget_s)
    if _in_memory(conf.database.connection):
        return failed_stats(["a sync run needs a database its own process can open; "
                             "[database] connection names an in-memory SQLite database"])
    job = Job(snapshot(conf), entry, run_id, at, deadline)
    child = subprocess.Popen([sys.executable, "-m", CHILD_MODULE], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, env=_child_environment())
    try:
        out, _ = child.communicate(job.to_json(),
                                   timeout=max(deadline - time.monotonic(), 0.0) + KILL_GRACE_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        LOG.warning("sync run %s of %s did not end within its budget of %g s; its process "
                    "(pid %s) was killed", run_id, entry.name, budget_s, child.pid)
        return failed_stats([f"{over_budget(budget_s)}: its process was stopped"])
    if child.returncode != 0:
        LOG.warning("sync run %s of %s: its process (pid %s) exited with status %s",
                    run_id, entry.name, child.pid, child.returncode)
        return failed_stats([f"internal error: the run's process exited with status "
                             f"{child.returncode}"])
    outcome = Outcome.from_json(out)
    child_metrics.add(outcome.metrics)
    return outcome.stats
