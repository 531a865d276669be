"""gunicorn's worker timeout against the longest route, checked at start.

The worker timeout is one value for the whole worker process, not one per route, so
it must cover the longest request the API serves: ``POST /internal/sync/{cloud}``,
which answers within ``[sync] budget_s`` plus a margin (abandoning a stuck adapter,
booking the last batch, writing the run).  Below that, gunicorn can kill a worker in
the middle of a run and the caller sees a dropped connection instead of the outcome.
"""

from __future__ import annotations

from oslo_config import cfg

SYNC_MARGIN_S = 15.0


def timeout_problem(conf: cfg.ConfigOpts) -> str | None:
    """Why ``[api] timeout`` cannot hold a sync run, or None."""
    budget = float(conf.sync.budget_s)
    if conf.api.timeout >= budget + SYNC_MARGIN_S:
        return None
    return (f"[api] timeout ({conf.api.timeout:g} s) must be at least [sync] budget_s "
            f"({budget:g} s) + {SYNC_MARGIN_S:g} s = {budget + SYNC_MARGIN_S:g} s: gunicorn "
            "would kill a worker in the middle of a sync run")
