"""One sync run of one cloud, start to finish (docs/reconciliation.md).

lock -> sync_runs row -> the run's own process does the work (``reporting.sync.
reconcile``: deletion window, observation, plan, booking, sightings) -> stats,
metrics -> unlock.  The lease and the row stay with the serving process, so a run
whose process is killed at its deadline is still recorded and unlocked.  Any
recorded error fails the run; a failed run keeps what it booked and does not move
the next run's bound.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import logging
import time
from collections.abc import Mapping
from typing import Any

from oslo_config import cfg
from sqlalchemy.orm import Session, sessionmaker

from mapping.event import format_timestamp
from reporting import metrics
from reporting.sync import lock, store
from reporting.sync.clouds import CloudEntry
from reporting.sync.run_ids import new_run_id
from reporting.sync.run_process import RunProcesses
from reporting.sync.stats import describe_deferred, failed_stats

LOG = logging.getLogger(__name__)

# A lease outlives the run's budget by this much; the run itself never does.
LEASE_MARGIN = dt.timedelta(seconds=60)


class UnknownCloud(LookupError):
    """The clouds file names no such cloud."""


class CloudBusy(RuntimeError):
    """Another run of the cloud holds its lease."""


class NotReconciled(RuntimeError):
    """The cloud is collected but not reconciled (no credentials in its entry)."""


@dataclasses.dataclass(frozen=True)
class RunResult:
    run_id: str
    cloud: str
    status: str
    started_at: dt.datetime
    completed_at: dt.datetime
    stats: dict[str, Any]

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.run_id,
            "cloud": self.cloud,
            "status": self.status,
            "kind": self.stats.get("kind", "full"),
            "started_at": format_timestamp(self.started_at),
            "completed_at": format_timestamp(self.completed_at),
            "stats": self.stats,
        }


class SyncService:
    def __init__(
        self,
        conf: cfg.ConfigOpts,
        factory: sessionmaker[Session],
        clouds: Mapping[str, CloudEntry],
    ) -> None:
        self.conf = conf
        self.factory = factory
        self.clouds = clouds
        self.processes = RunProcesses()

    def run(self, cloud: str, at: dt.datetime | None = None, full: bool = False) -> RunResult:
        """Run one sync of ``cloud``; ``at`` is the told instant (naive UTC), else now;
        ``full`` asks for a full run whatever ``[sync] full_listing_interval_s`` says."""
        entry = self.clouds.get(cloud)
        if entry is None:
            raise UnknownCloud(cloud)
        if not entry.reconciled:
            raise NotReconciled(cloud)  # no run is recorded: nothing failed
        budget_s = float(self.conf.sync.budget_s)
        deadline = time.monotonic() + budget_s
        run_id = new_run_id()
        started_at = at if at is not None else lock.utcnow()
        lease = dt.timedelta(seconds=budget_s) + LEASE_MARGIN
        if not lock.acquire(self.factory, cloud, run_id, lease):
            raise CloudBusy(cloud)
        try:
            store.create_run(self.factory, run_id, cloud, started_at)
            try:
                stats = self.processes.run(self.conf, entry, run_id, started_at, deadline,
                                           full)
            except Exception as exc:  # recorded, never lost with the lease held
                LOG.exception("sync run %s of %s failed unexpectedly", run_id, cloud)
                stats = failed_stats([f"internal error: {type(exc).__name__}: {exc}"])
            stats["error_count"] = len(stats["errors"])
            status = "failed" if stats["errors"] else "completed"
            completed_at = lock.utcnow()
            store.finish_run(self.factory, run_id, status, completed_at, stats)
        finally:
            lock.release(self.factory, cloud, run_id)
        self._count(cloud, status, stats)
        LOG.info("sync run %s of %s %s: created %s (restated %s), updated %s, deleted %s, "
                 "deferred %s, errors %s", run_id, cloud, status, stats["created"],
                 stats.get("restated", 0), stats["updated"], stats["deleted"],
                 describe_deferred(stats["deferred"]), stats["error_count"])
        return RunResult(run_id, cloud, status, started_at, completed_at, stats)

    @staticmethod
    def _count(cloud: str, status: str, stats: dict[str, Any]) -> None:
        metrics.SYNC_RUNS.labels(cloud=cloud, status=status).inc()
        for action in ("created", "updated", "deleted"):
            if stats[action]:
                metrics.SYNC_RESOURCES_RECONCILED.labels(cloud=cloud, action=action).inc(
                    stats[action])
        for reason, count in stats["deferred"].items():
            if count:
                metrics.SYNC_RESOURCES_DEFERRED.labels(cloud=cloud, reason=reason).inc(count)
        window = stats.get("deletion_window")
        if isinstance(window, dict) and window.get("clamped"):
            metrics.SYNC_DELETION_WINDOWS_CLAMPED.labels(cloud=cloud).inc()
        if status == "completed":
            metrics.SYNC_LAST_COMPLETED.labels(cloud=cloud).set(time.time())
