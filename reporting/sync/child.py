"""``python -m reporting.sync.child``: the process sync runs work in.

Started by a serving process when it has a run to do and no idle run process
(``reporting.sync.run_process``); it then does one run after another, each handed
as one JSON line on stdin (``reporting.sync.child_job.Job``), each answered as one
JSON line (the run's stats and the metrics it moved) on its answer pipe, the stdout
it was started with.  Its logging goes to stderr (or to the configured log file)
like the service's.  Its runs of one cloud share one keystoneauth session while the
cloud's clouds.yaml entry stays the same (``reporting.openstack.kept_session``).
Whatever a run does to its process stays there: the garbage
collector is off while a run holds one object per resource, and a client library
blocked where no timeout reaches blocks this process only — which the serving
process kills when the run's budget is spent.

It ends when its stdin closes (the serving process is gone or let it go), after
``IDLE_EXIT_S`` without a run, or by its own alarm ``2 x KILL_GRACE_S`` past a run's
deadline, so it never outlives what started it for long.
"""

from __future__ import annotations

import gc
import logging
import math
import os
import select
import signal
import sys
import time
from typing import IO, TYPE_CHECKING, Any

from reporting.sync.child_job import Job, Outcome, restore

if TYPE_CHECKING:
    from oslo_config import cfg
    from sqlalchemy.orm import Session, sessionmaker

LOG = logging.getLogger("reporting.sync.child")
PROG = "tally-reporting"
IDLE_EXIT_S = 120.0


class _Engines:
    """One engine per database URL for the life of the process (a pool kept warm
    between runs)."""

    def __init__(self) -> None:
        self._by_url: dict[str, sessionmaker[Session]] = {}

    def sessionmaker(self, conf: cfg.ConfigOpts) -> sessionmaker[Session]:
        from reporting.db.engine import engine_from_conf, make_sessionmaker

        url = conf.database.connection
        if url not in self._by_url:
            self._by_url[url] = make_sessionmaker(engine_from_conf(conf))
        return self._by_url[url]


def _next_job(stdin: IO[bytes]) -> Job | None:
    """The next job, or None when stdin closed or no job came for IDLE_EXIT_S."""
    ready, _, _ = select.select([stdin], [], [], IDLE_EXIT_S)
    if not ready:
        return None
    line = stdin.readline()
    return Job.from_json(line) if line.strip() else None


def _run(job: Job, engines: _Engines) -> dict[str, Any]:
    from reporting.sync.observation import RunAborted
    from reporting.sync.reconcile import reconcile
    from reporting.sync.run_process import KILL_GRACE_S
    from reporting.sync.stats import empty_stats

    conf = restore(job.options)
    stats = empty_stats()
    # Bounded even when the serving process dies first and cannot kill it.
    signal.alarm(max(1, math.ceil(job.deadline - time.monotonic() + 2 * KILL_GRACE_S)))
    # A run holds one object per resource and builds nothing cyclic: the generational
    # collector would rescan them over and over (a third of a run's time in the
    # benchmark).  Off for the run, one collection after it.
    gc.disable()
    try:
        reconcile(conf, engines.sessionmaker(conf), job.entry, job.run_id, job.at,
                  job.deadline, stats, full=job.full)
    except RunAborted as exc:
        stats["errors"].append(str(exc))
    except Exception as exc:  # recorded in the run, never lost
        LOG.exception("sync run %s of %s failed unexpectedly", job.run_id, job.entry.name)
        stats["errors"].append(f"internal error: {type(exc).__name__}: {exc}")
    finally:
        signal.alarm(0)
        gc.enable()
    return stats


def main() -> int:
    # The answers get a pipe of their own: anything printed to stdout by a library
    # goes to stderr instead and cannot corrupt them.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    stdin = sys.stdin.buffer
    engines = _Engines()
    job = _next_job(stdin)
    if job is None:
        return 0
    from reporting.cmd import setup_logging
    from reporting.openstack.kept_session import keep_sessions_in_this_process
    from reporting.sync import child_metrics

    setup_logging(restore(job.options), PROG, to_stderr=True)
    # Runs of one cloud share a keystoneauth session: token and version discovery.
    keep_sessions_in_this_process()
    gc.freeze()  # the imports' objects are never collected: keep them out of every scan
    counted = child_metrics.Tally()
    first = True
    while job is not None:
        stats = _run(job, engines)
        answers.write(Outcome(stats, counted.since_last()).to_json() + b"\n")
        answers.flush()
        gc.collect()
        if first:
            # What outlives the first run is the process's own state: the modules a run
            # imports on first use, the engine and its compiled-statement cache, the kept
            # session.  Unfrozen, every later run's collection rescanned all of it (a
            # third of a small cloud's run).
            gc.freeze()
            first = False
        job = _next_job(stdin)
    return 0


if __name__ == "__main__":
    sys.exit(main())
