"""One sync run of one cloud, start to finish (docs/reconciliation.md).

lock -> sync_runs row -> deletion window -> adapter observes the cloud -> read the
projection -> plan -> book the corrections through the ordinary ingest path ->
sightings and size names -> stats, metrics -> unlock.  Any recorded error fails the
run; a failed run keeps what it booked and does not move the next run's bound.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from oslo_config import cfg
from sqlalchemy.orm import Session, sessionmaker

from mapping.event import MAX_BATCH, format_timestamp
from reporting import metrics
from reporting.ingest import ingest
from reporting.sync import lock, store
from reporting.sync.clouds import CloudEntry, build_adapter
from reporting.sync.observation import Adapter, Observation, ObserveRequest, RunAborted
from reporting.sync.plan import ACTION_STAT, Plan, RunContext, plan_corrections
from reporting.sync.run_ids import new_run_id
from reporting.sync.stats import describe_deferred, empty_stats
from reporting.sync.window import deletion_window

LOG = logging.getLogger(__name__)

# A lease outlives the run's budget by this much; the run itself never does.
LEASE_MARGIN = dt.timedelta(seconds=60)
# How long past its deadline a run waits for an adapter that has not returned.
OBSERVE_GRACE_S = 1.0


class UnknownCloud(LookupError):
    """The clouds file names no such cloud."""


class CloudBusy(RuntimeError):
    """Another run of the cloud holds its lease."""


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
            "started_at": format_timestamp(self.started_at),
            "completed_at": format_timestamp(self.completed_at),
            "stats": self.stats,
        }


_GC_LOCK = threading.Lock()
_GC_PAUSES = 0
_GC_WAS_ENABLED = True


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a run holds one object per resource.

    A 100,000-resource observation and projection are hundreds of thousands of fresh
    containers; the generational collector would rescan them over and over (a third
    of a run's time in the benchmark).  Nothing a run builds is cyclic, so nothing
    waits for the collector; it runs again when the last concurrent run is done.
    """
    global _GC_PAUSES, _GC_WAS_ENABLED
    with _GC_LOCK:
        if _GC_PAUSES == 0:
            _GC_WAS_ENABLED = gc.isenabled()
            gc.disable()
        _GC_PAUSES += 1
    try:
        yield
    finally:
        with _GC_LOCK:
            _GC_PAUSES -= 1
            if _GC_PAUSES == 0 and _GC_WAS_ENABLED:
                gc.enable()


def observe_within_budget(adapter: Adapter, request: ObserveRequest, budget_s: float
                          ) -> Observation:
    """``adapter.observe`` in a worker thread the run stops waiting for at its deadline.

    Every request an adapter sends is bounded by the budget, but a client library can
    still block where no timeout reaches (keystoneauth waits on its own plugin lock
    when an identity endpoint answers its version document 401).  The run must end
    inside its budget regardless: a thread that outlives it is abandoned (daemon).
    """
    outcome: dict[str, Any] = {}

    def observe() -> None:
        try:
            outcome["observation"] = adapter.observe(request)
        except BaseException as exc:  # handed to the run below
            outcome["error"] = exc

    worker = threading.Thread(target=observe, name=f"sync-observe-{request.cloud}", daemon=True)
    worker.start()
    worker.join(max(request.deadline - time.monotonic(), 0.0) + OBSERVE_GRACE_S)
    if worker.is_alive():
        LOG.warning("sync of %s: the adapter did not return within the budget; abandoning it",
                    request.cloud)
        raise RunAborted(f"the run did not fit its budget of {budget_s:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["observation"]


class SyncService:
    def __init__(
        self,
        conf: cfg.ConfigOpts,
        factory: sessionmaker[Session],
        clouds: Mapping[str, CloudEntry],
        adapter_factory: Callable[[CloudEntry, float], Adapter] = build_adapter,
    ) -> None:
        self.conf = conf
        self.factory = factory
        self.clouds = clouds
        self.adapter_factory = adapter_factory

    def run(self, cloud: str, at: dt.datetime | None = None) -> RunResult:
        """Run one sync of ``cloud``; ``at`` is the told instant (naive UTC), else now."""
        entry = self.clouds.get(cloud)
        if entry is None:
            raise UnknownCloud(cloud)
        budget_s = float(self.conf.sync.budget_s)
        deadline = time.monotonic() + budget_s
        run_id = new_run_id()
        started_at = at if at is not None else lock.utcnow()
        lease = dt.timedelta(seconds=budget_s) + LEASE_MARGIN
        if not lock.acquire(self.factory, cloud, run_id, lease):
            raise CloudBusy(cloud)
        try:
            store.create_run(self.factory, run_id, cloud, started_at)
            stats = empty_stats()
            try:
                with gc_paused():
                    self._run(entry, run_id, started_at, deadline, budget_s, stats)
            except RunAborted as exc:
                stats["errors"].append(str(exc))
            except Exception as exc:  # recorded, never lost with the lease held
                LOG.exception("sync run %s of %s failed unexpectedly", run_id, cloud)
                stats["errors"].append(f"internal error: {type(exc).__name__}: {exc}")
            stats["error_count"] = len(stats["errors"])
            status = "failed" if stats["errors"] else "completed"
            completed_at = lock.utcnow()
            store.finish_run(self.factory, run_id, status, completed_at, stats)
        finally:
            lock.release(self.factory, cloud, run_id)
        self._count(cloud, status, stats)
        LOG.info("sync run %s of %s %s: created %s, updated %s, deleted %s, deferred %s, "
                 "errors %s", run_id, cloud, status, stats["created"], stats["updated"],
                 stats["deleted"], describe_deferred(stats["deferred"]), stats["error_count"])
        return RunResult(run_id, cloud, status, started_at, completed_at, stats)

    def _run(self, entry: CloudEntry, run_id: str, at: dt.datetime, deadline: float,
             budget_s: float, stats: dict[str, Any]) -> None:
        settle = dt.timedelta(seconds=float(self.conf.sync.settle_s))
        bound = store.completed_bound(self.factory, entry.name)
        window = deletion_window(at, bound, settle)
        if window.behind_bound:
            LOG.warning("sync of %s: told instant %s is behind the last completed run (%s); "
                        "asking for the whole 24 hours of deletions before it",
                        entry.name, format_timestamp(at), format_timestamp(bound or at))
        stats["deletion_window"] = {
            "since": format_timestamp(window.since) if window.since else None,
            "clamped": window.clamped,
        }
        adapter = self.adapter_factory(entry, budget_s)
        observation = observe_within_budget(
            adapter, ObserveRequest(entry.name, at, window.since, deadline), budget_s)
        stats["enumerated_types"] = sorted(observation.enumerated_types)
        stats["errors"].extend(observation.errors)
        if time.monotonic() > deadline:
            raise RunAborted(f"the run did not fit its budget of {budget_s:g} s")
        if observation.size_names is not None:
            store.store_size_names(self.factory, entry.platform, entry.name,
                                   observation.size_names, lock.utcnow())
        ctx = RunContext(run_id, entry.platform, entry.name, at, settle)
        plan = self._plan(ctx, observation, bound)
        stats["deferred"] = dict(plan.deferred)
        self._book(plan, stats, deadline, budget_s)
        if not stats["errors"]:
            seen = [(o.resource_type, o.resource_id) for o in observation.resources]
            store.record_sightings(self.factory, entry.name, seen, at, bound)

    def _plan(self, ctx: RunContext, observation: Observation, bound: dt.datetime | None
              ) -> Plan:
        # The listing was read first, the projection now (see the absence rule).
        rows = store.projection_rows(self.factory, ctx.platform, ctx.cloud)
        keys = {(row.resource_type, row.resource_id) for row in rows}
        observed = {(o.resource_type, o.resource_id) for o in observation.resources}
        named = observed | observation.unknown | {
            (d.resource_type, d.resource_id) for d in observation.deletions}
        held = store.held_deleted(self.factory, ctx.platform, ctx.cloud, observed - keys)
        absent = [
            (row.resource_type, row.resource_id) for row in rows
            if row.live and row.resource_type in observation.enumerated_types
            and (row.resource_type, row.resource_id) not in named
        ]
        seen = store.last_seen(self.factory, ctx.cloud, absent, bound)
        return plan_corrections(ctx, observation, rows, held, seen)

    def _book(self, plan: Plan, stats: dict[str, Any], deadline: float, budget_s: float
              ) -> None:
        strict = bool(self.conf.ingest.require_size_schema)
        corrections = plan.corrections
        for start in range(0, len(corrections), MAX_BATCH):
            if time.monotonic() > deadline:
                # What is booked stands; the next run plans the rest again.
                stats["errors"].append(
                    f"the run did not fit its budget of {budget_s:g} s: booked {start} of "
                    f"{len(corrections)} corrections")
                return
            batch = corrections[start:start + MAX_BATCH]
            results = ingest(self.factory, [c.event for c in batch],
                                    require_size_schema=strict)
            for correction, result in zip(batch, results, strict=True):
                if result.status == "stored":
                    stats[ACTION_STAT[correction.action]] += 1
                elif result.status == "rejected":
                    stats["errors"].append(
                        f"booking sync.{correction.action} of {correction.resource_type} "
                        f"{correction.resource_id}: rejected: {result.reason}")

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
        if status == "completed":
            metrics.SYNC_LAST_COMPLETED.labels(cloud=cloud).set(time.time())
