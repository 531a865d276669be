"""The database side of a run: sync_runs rows, the projection it diffs against,
sightings and size names."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.db import writes
from reporting.db.models import CurrentResource, SyncRun, SyncSighting
from reporting.sync.observation import SizeNameEntry
from reporting.sync.plan import ProjectionRow

_CHUNK = 2000


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


# --- sync_runs ---------------------------------------------------------------------------

def create_run(factory: sessionmaker[Session], run_id: str, cloud: str,
               started_at: dt.datetime) -> None:
    # ``kind`` is the column's default (full) until the run says otherwise at its end.
    with factory.begin() as session:
        session.add(SyncRun(id=run_id, cloud=cloud, status="running", started_at=started_at,
                            completed_at=None, stats={}))


def finish_run(factory: sessionmaker[Session], run_id: str, status: str,
               completed_at: dt.datetime, stats: dict[str, Any]) -> None:
    with factory.begin() as session:
        session.execute(sa.update(SyncRun).where(SyncRun.id == run_id)
                        .values(status=status, completed_at=completed_at, stats=stats,
                                kind=stats.get("kind") or "full"))


def completed_bound(factory: sessionmaker[Session], cloud: str,
                    kind: str | None = None) -> dt.datetime | None:
    """The newest started_at of the cloud's completed runs (where the next window
    opens), of ``kind`` only when given (``full``: the last run that listed every
    resource)."""
    query = sa.select(sa.func.max(SyncRun.started_at)).where(
        SyncRun.cloud == cloud, SyncRun.status == "completed")
    if kind is not None:
        query = query.where(SyncRun.kind == kind)
    with factory() as session:
        return session.execute(query).scalar_one_or_none()


def completed_bounds(factory: sessionmaker[Session], cloud: str
                     ) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(``completed_bound`` of every kind, of ``full`` runs only), in one statement."""
    started = SyncRun.started_at
    query = sa.select(sa.func.max(started),
                      sa.func.max(sa.case((SyncRun.kind == "full", started)))).where(
        SyncRun.cloud == cloud, SyncRun.status == "completed")
    with factory() as session:
        latest, full = session.execute(query).one()
    return latest, full


# --- the projection ------------------------------------------------------------------------

_ROW_COLUMNS = (CurrentResource.resource_type, CurrentResource.resource_id,
                CurrentResource.project_id, CurrentResource.state, CurrentResource.size,
                CurrentResource.live, CurrentResource.last_event_at)


def projection_rows(factory: sessionmaker[Session], platform: str, cloud: str
                    ) -> list[ProjectionRow]:
    """Every row of the cloud the projection does not hold as deleted (a full run)."""
    r = CurrentResource
    with factory() as session:
        return [ProjectionRow(*row) for row in session.execute(
            sa.select(*_ROW_COLUMNS).where(r.platform == platform, r.cloud == cloud,
                                           sa.or_(r.live.is_(True), r.deleted_at.is_(None))))]


def projection_rows_by_key(factory: sessionmaker[Session], platform: str, cloud: str,
                           keys: Iterable[tuple[str, str]]) -> list[ProjectionRow]:
    """Of ``keys``, the rows the projection does not hold as deleted (an incremental
    run reads the rows of what changed, not the whole cloud's)."""
    with factory() as session:
        found = writes.of(session).rows_by_key(session, platform, cloud, sorted(set(keys)))
    return [ProjectionRow(*row[:7]) for row in found if row.live or row.deleted_at is None]


def live_keys(factory: sessionmaker[Session], platform: str, cloud: str,
              types: Iterable[str]) -> set[tuple[str, str]]:
    """The keys of the live rows of ``types`` (an incremental run's types listed
    whole): the keys alone, not the rows the diff reads."""
    r = CurrentResource
    whole = sorted(set(types))
    if not whole:
        return set()
    with factory() as session:
        return {(rtype, rid) for rtype, rid in session.execute(
            sa.select(r.resource_type, r.resource_id).where(
                r.platform == platform, r.cloud == cloud, r.resource_type.in_(whole),
                r.live.is_(True)))}


def held_deleted(factory: sessionmaker[Session], platform: str, cloud: str,
                 keys: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    """Of ``keys``, those whose row the projection holds as deleted."""
    with factory() as session:
        rows = writes.of(session).rows_by_key(session, platform, cloud, sorted(set(keys)))
    return {(row.resource_type, row.resource_id) for row in rows
            if not row.live and row.deleted_at is not None}


# --- sightings ---------------------------------------------------------------------------
#
# A completed run enumerated every type, so it listed every resource that existed
# when it looked.  A sighting therefore only changes when a resource is listed for
# the first time (opened) or a completed run does not list it (closed at the last
# completed run that did): a run writes the few resources that came or went, never
# one row per live resource.

# Closed sightings of resources long gone are forgotten after this long.
SIGHTING_RETENTION = dt.timedelta(days=7)


def last_seen(factory: sessionmaker[Session], cloud: str, keys: Iterable[tuple[str, str]],
              bound: dt.datetime | None) -> dict[tuple[str, str], dt.datetime]:
    """For each key, the started_at of the newest completed run that listed it alive.

    ``bound`` is the newest started_at of the cloud's completed runs: an open
    sighting was listed by every completed run since it opened, that one included.
    """
    seen: dict[tuple[str, str], dt.datetime] = {}
    with factory() as session:
        for rtype, rid, until in writes.of(session).sightings_by_key(
                session, cloud, sorted(set(keys))):
            last = until if until is not None else bound
            if last is not None:
                seen[(rtype, rid)] = last
    return seen


def _open_keys(session: Session, cloud: str, types: Iterable[str] | None = None,
               keys: Iterable[tuple[str, str]] = ()) -> set[tuple[str, str]]:
    """The open sightings of the cloud: all of them when ``types`` is None, else those
    of ``types`` and those among ``keys``."""
    s = SyncSighting
    query = sa.select(s.resource_type, s.resource_id).where(
        s.cloud == cloud, s.seen_until.is_(None))
    if types is None:
        return {(rtype, rid) for rtype, rid in session.execute(query)}
    whole = sorted(set(types))
    found: set[tuple[str, str]] = set()
    if whole:
        found.update((rtype, rid) for rtype, rid in session.execute(
            query.where(s.resource_type.in_(whole))))
    keyed = sorted({key for key in keys if key[0] not in whole})
    found.update((rtype, rid) for rtype, rid, until in
                 writes.of(session).sightings_by_key(session, cloud, keyed) if until is None)
    return found


def _open(session: Session, cloud: str, keys: Sequence[tuple[str, str]],
          at: dt.datetime) -> None:
    seam = writes.of(session)
    for chunk in _chunks(keys, 5000):
        seam.open_sightings(session, [  # a closed sighting reopens
            {"cloud": cloud, "resource_type": rtype, "resource_id": rid,
             "first_seen_at": at, "seen_until": None}
            for rtype, rid in chunk
        ])


def _close(session: Session, cloud: str, keys: Sequence[tuple[str, str]],
           until: dt.datetime | None) -> None:
    s = SyncSighting
    by_type: dict[str, list[str]] = {}
    for rtype, rid in keys:
        by_type.setdefault(rtype, []).append(rid)
    for rtype, ids in by_type.items():
        for chunk in _chunks(ids):
            where = (s.cloud == cloud, s.resource_type == rtype, s.resource_id.in_(chunk))
            if until is None:  # no completed run ever listed them after all
                session.execute(sa.delete(SyncSighting).where(*where))
            else:
                session.execute(sa.update(SyncSighting).where(*where).values(seen_until=until))


def record_sightings(factory: sessionmaker[Session], cloud: str,
                     listed: Iterable[tuple[str, str]], at: dt.datetime,
                     bound: dt.datetime | None,
                     exhaustive: Iterable[str] | None = None,
                     partial: bool = False) -> None:
    """A completed run at ``at`` listed ``listed`` alive; ``bound`` is the newest
    started_at of the cloud's completed runs before it.  Only types in
    ``exhaustive`` (every type when None) close the sightings of what they did not
    list: a type whose listing can leave a live resource out (nova below 2.69 and
    its unreachable cells) proves nothing by leaving one out.  ``partial``: the run
    listed some types by change only (an incremental run), so only the sightings of
    what it listed and of the exhaustive types are read, not the whole cloud's."""
    listed = set(listed)
    closing = None if exhaustive is None else set(exhaustive)
    with factory.begin() as session:
        if partial and closing is not None:
            opened = _open_keys(session, cloud, closing, listed)
        else:
            opened = _open_keys(session, cloud)
        _open(session, cloud, sorted(listed - opened), at)
        unlisted = opened - listed
        if closing is not None:
            unlisted = {key for key in unlisted if key[0] in closing}
        _close(session, cloud, sorted(unlisted), bound)
        if not partial:  # the cloud-wide clean-up is a full run's
            session.execute(sa.delete(SyncSighting).where(
                SyncSighting.cloud == cloud,
                SyncSighting.seen_until < at - SIGHTING_RETENTION))


# --- size names ----------------------------------------------------------------------------

def store_size_names(factory: sessionmaker[Session], platform: str, cloud: str,
                     entries: Sequence[SizeNameEntry], now: dt.datetime) -> None:
    if not entries:
        return
    with factory.begin() as session:
        writes.of(session).upsert_size_names(session, [
            {"platform": platform, "cloud": cloud, "kind": e.kind, "size_id": e.size_id,
             "name": e.name, "updated_at": now}
            for e in entries
        ])
