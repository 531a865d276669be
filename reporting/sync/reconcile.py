"""The work of one sync run, done in the run's own process (``reporting.sync.child``).

deletion window -> adapter observes the cloud -> read the projection -> plan -> book
the corrections through the ordinary ingest path -> sightings and size names.  The
lease and the ``sync_runs`` row belong to the process that started the run
(``reporting.sync.runner``); this module only fills in the run's stats.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterator
from typing import Any

from oslo_config import cfg
from sqlalchemy.orm import Session, sessionmaker

from mapping.event import MAX_BATCH, format_timestamp
from reporting.billing import default_accounts
from reporting.future import FutureClock
from reporting.ingest import ingest
from reporting.sync import lock, store
from reporting.sync.clouds import CloudEntry, build_adapter
from reporting.sync.observation import Observation, ObserveRequest, RunAborted
from reporting.sync.plan import (
    ACTION_STAT,
    Correction,
    Plan,
    RunContext,
    plan_corrections,
    unchanged_since,
)
from reporting.sync.window import deletion_window

LOG = logging.getLogger(__name__)


def over_budget(budget_s: float) -> str:
    """The error of a run that did not fit its budget (one wording wherever it ends)."""
    return f"the run did not fit its budget of {budget_s:g} s"


def reconcile(conf: cfg.ConfigOpts, factory: sessionmaker[Session], entry: CloudEntry,
              run_id: str, at: dt.datetime, deadline: float, stats: dict[str, Any],
              full: bool = False) -> None:
    """Reconcile ``entry`` at the told instant ``at`` (naive UTC) before ``deadline``
    (``time.monotonic()``), recording what happened in ``stats``; ``full`` makes it a
    full run whatever ``[sync] full_listing_interval_s`` says.  Raises RunAborted
    when the run cannot go on."""
    budget_s = float(conf.sync.budget_s)
    settle = dt.timedelta(seconds=float(conf.sync.settle_s))
    max_window = dt.timedelta(days=float(conf.sync.deletion_window_max_days))
    bound, last_full = store.completed_bounds(factory, entry.name)
    window = deletion_window(at, bound, settle, max_window)
    if window.behind_bound:
        LOG.warning("sync of %s: told instant %s is behind the last completed run (%s); "
                    "asking for the whole 24 hours of deletions before it",
                    entry.name, format_timestamp(at), format_timestamp(bound or at))
    elif window.clamped:
        LOG.warning("sync of %s: the last completed run (%s) is older than [sync] "
                    "deletion_window_max_days (%g): asking for the deleted servers since %s "
                    "only; instance deletes before it are dated at the poll",
                    entry.name, format_timestamp(bound or at),
                    float(conf.sync.deletion_window_max_days),
                    format_timestamp(window.since or at))
    stats["deletion_window"] = {
        "since": format_timestamp(window.since) if window.since else None,
        "clamped": window.clamped,
        # Instance deletes booked by absence (dated at the poll) in a clamped window:
        # nova's instant may have lain before the window opened.
        "deleted_at_poll": 0,
    }
    changed_since, full_bound = _incremental_since(conf, at, bound, last_full, settle)
    if full:
        changed_since = None
    if changed_since is not None:
        stats["kind"] = "incremental"
        stats["changed_since"] = format_timestamp(changed_since)
    adapter = build_adapter(entry, budget_s)
    observation = adapter.observe(ObserveRequest(entry.name, at, window.since, deadline,
                                                 changed_since))
    stats["enumerated_types"] = sorted(observation.enumerated_types)
    stats["changed_types"] = sorted(observation.changed_types)
    stats["errors"].extend(observation.errors)
    if time.monotonic() > deadline:
        raise RunAborted(over_budget(budget_s))
    if observation.size_names is not None:
        store.store_size_names(factory, entry.platform, entry.name,
                               observation.size_names, lock.utcnow())
    # The sync's own events are bounded like any other (reporting.future): the
    # horizon past which no instant is a fact, and ingest's check of the corrections.
    future = FutureClock.from_conf(conf, {entry.name: entry})
    present = future.bound(entry.name)
    ctx = RunContext(run_id, entry.platform, entry.name, at, settle,
                     None if present is None else max(present.latest, at))
    plan = _plan(factory, ctx, observation, full_bound, changed_since)
    if plan.unchanged is not None:
        stats["unchanged"] = plan.unchanged
    if plan.beyond_horizon:
        LOG.warning("sync of %s: %d resource(s) hold an event dated after %s (the cloud's "
                    "present plus [ingest] max_future_skew_s): not deferred for it, their "
                    "corrections dated at the run's instant; GET /v1/resources?cloud=%s "
                    "shows their last_event_at", entry.name, plan.beyond_horizon,
                    format_timestamp(ctx.horizon or at), entry.name)
    stats["deferred"] = dict(plan.deferred)
    _book(factory, plan, stats, deadline, budget_s,
          strict=bool(conf.ingest.require_size_schema), future=future)
    if observation.default_accounts is not None or observation.default_account_errors:
        _default_accounts(factory, entry.name, observation, at, stats)
    if not stats["errors"]:
        seen = [(o.resource_type, o.resource_id) for o in observation.resources]
        store.record_sightings(factory, entry.name, seen, at, full_bound,
                               exhaustive=observation.enumerated_types,
                               partial=bool(observation.changed_types))


def _default_accounts(factory: sessionmaker[Session], cloud: str, observation: Observation,
                      at: dt.datetime, stats: dict[str, Any]) -> None:
    """Each new project's default billing account (its keystone domain's); what this
    could not do is said in the run's stats and log, and never fails the run."""
    report = default_accounts.assign(factory, cloud, observation.default_accounts or {},
                                     observation.default_account_errors, at, lock.utcnow())
    stats["default_accounts"] = report
    for error in report["errors"]:
        LOG.warning("sync of %s: default accounts: %s", cloud, error)
    if report["memberships_added"]:
        LOG.info("sync of %s: %d project(s) joined their domain's account (%d account(s) "
                 "added)", cloud, report["memberships_added"], len(report["accounts_added"]))


def _incremental_since(conf: cfg.ConfigOpts, at: dt.datetime, bound: dt.datetime | None,
                       last_full: dt.datetime | None, settle: dt.timedelta
                       ) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(where an incremental run asks for changes from, None for a full run; the
    bound of the sightings: ``last_full``, the newest started_at of the cloud's
    completed full runs, or ``bound``, that of all its completed runs, when every run
    is full).

    A run is full when no run completed before, when the last completed full run
    started ``[sync] full_listing_interval_s`` or more before ``at`` (0: always), or
    when ``at`` is behind the last completed run.  An incremental run asks for what
    changed since the last completed run started, less the settle window: what that
    run deferred as recent changed inside it, so it is listed again."""
    interval = float(conf.sync.full_listing_interval_s)
    if not interval or bound is None:
        return None, bound
    if last_full is None or at < bound or at - last_full >= dt.timedelta(seconds=interval):
        return None, last_full
    return bound - settle, last_full


def _plan(factory: sessionmaker[Session], ctx: RunContext, observation: Observation,
          bound: dt.datetime | None, changed_since: dt.datetime | None) -> Plan:
    # The listing was read first, the projection now (see the absence rule).
    observed = {(o.resource_type, o.resource_id) for o in observation.resources}
    named = observed | observation.unknown | {
        (d.resource_type, d.resource_id) for d in observation.deletions}
    unchanged: set[tuple[str, str]] = set()
    incremental = bool(observation.changed_types)
    if incremental:
        # Incremental: the rows of what changed, and of the types listed whole those
        # that changed since the bound or were not listed (absent); the others of
        # those types only count as present (plan.unchanged_since).
        live = store.live_keys(factory, ctx.platform, ctx.cloud,
                               observation.enumerated_types)
        if changed_since is not None:
            unchanged = unchanged_since(observation, changed_since, live)
        rows = store.projection_rows_by_key(factory, ctx.platform, ctx.cloud,
                                            (named - unchanged) | (live - named))
    else:
        rows = store.projection_rows(factory, ctx.platform, ctx.cloud)
    keys = {(row.resource_type, row.resource_id) for row in rows}
    held = store.held_deleted(factory, ctx.platform, ctx.cloud, observed - keys - unchanged)
    absent = [
        (row.resource_type, row.resource_id) for row in rows
        if row.live and row.resource_type in observation.enumerated_types
        and (row.resource_type, row.resource_id) not in named
    ]
    seen = store.last_seen(factory, ctx.cloud, absent, bound)
    plan = plan_corrections(ctx, observation, rows, held, seen, unchanged)
    if incremental:
        plan.unchanged = len(unchanged)
    return plan


def _book(factory: sessionmaker[Session], plan: Plan, stats: dict[str, Any], deadline: float,
          budget_s: float, *, strict: bool, future: FutureClock | None = None) -> None:
    corrections = plan.corrections
    for start, batch in _batches(corrections):
        if time.monotonic() > deadline:
            # What is booked stands; the next run plans the rest again.
            stats["errors"].append(
                f"{over_budget(budget_s)}: booked {start} of {len(corrections)} corrections")
            return
        results = iter(ingest(factory, [e for c in batch for e in c.events],
                              require_size_schema=strict, future=future))
        for correction in batch:
            # A correction counts by its first event; a create's restatement at the
            # poll (plan.Correction.restated) is part of it, counted once more in
            # ``restated`` so a run's events add up (created + restated + ...).
            outcomes = [next(results) for _ in correction.events]
            if outcomes[0].status == "stored":
                stats[ACTION_STAT[correction.action]] += 1
                if _clamped_delete(stats, correction):
                    stats["deletion_window"]["deleted_at_poll"] += 1
                if correction.restated is not None and outcomes[1].status == "stored":
                    stats["restated"] += 1
            for outcome in outcomes:
                if outcome.status == "rejected":
                    stats["errors"].append(
                        f"booking sync.{correction.action} of {correction.resource_type} "
                        f"{correction.resource_id}: rejected: {outcome.reason}")
                    break


def _clamped_delete(stats: dict[str, Any], correction: Correction) -> bool:
    """Whether ``correction`` is an instance delete dated at the poll in a run whose
    deleted-servers window was clamped."""
    window = stats.get("deletion_window") or {}
    if not window.get("clamped") or correction.action != "delete":
        return False
    provider = correction.event["payload"].get("provider", {})
    return correction.resource_type == "instance" and provider.get("dated_by") == "poll"


def _batches(corrections: list[Correction]) -> Iterator[tuple[int, list[Correction]]]:
    """(index of the first, the corrections) of batches of at most MAX_BATCH events,
    a correction's events never split between two."""
    start, size = 0, 0
    batch: list[Correction] = []
    for index, correction in enumerate(corrections):
        count = len(correction.events)
        if batch and size + count > MAX_BATCH:
            yield start, batch
            start, batch, size = index, [], 0
        batch.append(correction)
        size += count
    if batch:
        yield start, batch
