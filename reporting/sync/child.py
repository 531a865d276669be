"""``python -m reporting.sync.child``: one sync run's own process.

Started by the serving process for every run (``reporting.sync.run_process``), with
the job (``reporting.sync.child_job.Job``) on stdin; answers the run's stats and the
metrics it moved as one JSON document on stdout, and logs to stderr (or to the
configured log file) like the service.  Whatever a run does to its process — the
collector paused over hundreds of thousands of fresh objects, a client library
blocked where no timeout reaches — ends with it: the serving process is untouched,
and kills this one when the run's budget is spent.
"""

from __future__ import annotations

import gc
import logging
import math
import signal
import sys
import time

from reporting.sync.child_job import Job, Outcome, restore

LOG = logging.getLogger("reporting.sync.child")
PROG = "tally-reporting"


def main() -> int:
    job = Job.from_json(sys.stdin.buffer.read())
    from reporting.sync.run_process import KILL_GRACE_S

    # Bounded even when the serving process dies first and cannot kill it.
    signal.alarm(max(1, math.ceil(job.deadline - time.monotonic() + 2 * KILL_GRACE_S)))
    conf = restore(job.options)
    from reporting.cmd import setup_logging

    setup_logging(conf, PROG, to_stderr=True)  # stdout is the outcome
    # A run holds one object per resource and builds nothing cyclic: the generational
    # collector would rescan them over and over (a third of a run's time in the
    # benchmark).  This process ends with the run, so the collector simply stays off.
    gc.disable()

    from reporting.db.engine import engine_from_conf, make_sessionmaker
    from reporting.sync import child_metrics
    from reporting.sync.observation import RunAborted
    from reporting.sync.reconcile import reconcile
    from reporting.sync.stats import empty_stats

    stats = empty_stats()
    engine = engine_from_conf(conf)
    try:
        reconcile(conf, make_sessionmaker(engine), job.entry, job.run_id, job.at,
                  job.deadline, stats)
    except RunAborted as exc:
        stats["errors"].append(str(exc))
    except Exception as exc:  # recorded in the run, never lost
        LOG.exception("sync run %s of %s failed unexpectedly", job.run_id, job.entry.name)
        stats["errors"].append(f"internal error: {type(exc).__name__}: {exc}")
    finally:
        engine.dispose()
    sys.stdout.buffer.write(Outcome(stats, child_metrics.collect()).to_json())
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
