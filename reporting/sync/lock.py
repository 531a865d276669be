"""The per-cloud run lock: a lease row in ``sync_locks``.

It lives in the database, so it holds across workers, processes and replicas.  A
lease outlives its run's budget by a margin; a holder that died leaves a lease that
simply expires, and the next run takes it over (marking the dead run failed).
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import socket

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from reporting.clock import utcnow
from reporting.db.models import SyncLock, SyncRun
from reporting.sync.stats import failed_stats

LOG = logging.getLogger(__name__)


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:255]


def acquire(
    factory: sessionmaker[Session], cloud: str, run_id: str, lease: dt.timedelta
) -> bool:
    """Take the cloud's lease for ``run_id``; False while a live lease holds it."""
    now = utcnow()
    row = {"cloud": cloud, "run_id": run_id, "holder": holder_name(),
           "acquired_at": now, "expires_at": now + lease}
    try:
        with factory.begin() as session:
            session.execute(sa.insert(SyncLock).values(**row))
        return True
    except sa.exc.IntegrityError:
        pass
    with factory.begin() as session:
        stale = session.execute(
            sa.select(SyncLock.run_id).where(SyncLock.cloud == cloud, SyncLock.expires_at < now)
        ).scalar_one_or_none()
        taken = session.execute(  # type: ignore[attr-defined]
            sa.update(SyncLock)
            .where(SyncLock.cloud == cloud, SyncLock.expires_at < now)
            .values(run_id=run_id, holder=row["holder"], acquired_at=now,
                    expires_at=row["expires_at"])
        ).rowcount
        if not taken:
            return False
        if stale is not None:
            LOG.warning("sync of %s: took over the expired lease of run %s", cloud, stale)
            session.execute(
                sa.update(SyncRun)
                .where(SyncRun.id == stale, SyncRun.status == "running")
                .values(status="failed", completed_at=now,
                        stats=failed_stats(["the run's holder stopped before it finished"]))
            )
    return True


def release(factory: sessionmaker[Session], cloud: str, run_id: str) -> None:
    with factory.begin() as session:
        session.execute(sa.delete(SyncLock).where(SyncLock.cloud == cloud,
                                                  SyncLock.run_id == run_id))
