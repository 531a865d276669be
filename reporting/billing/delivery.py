"""The webhook delivery worker: posts the deliveries closes wrote, signed, retried.

Each pass claims one due delivery at a time (``pending``, ``next_attempt_at`` passed,
no live lease) by setting its lease in a short transaction, posts the body outside
any transaction, then records the attempt: a 2xx marks it ``delivered``; anything
else (another status, a connection error, a timeout) schedules the next attempt
``retry_base_s × 2^(attempts − 1)`` later (at most ``retry_max_s``), or marks it
``failed`` after ``max_attempts`` (``redeliver`` starts a new round).

Only one worker posts a row at a time, however many reporting processes share the
database: the claim is an ``UPDATE`` whose ``WHERE`` requires no live lease, so of
two claimers one changes the row and the other none (PostgreSQL re-checks the
condition on the row the first one committed; SQLite has one writer, and
``begin_write`` takes its write lock before the claim reads).  On PostgreSQL the
candidates are read ``FOR UPDATE SKIP LOCKED`` as well, so claimers pass each other's
rows by instead of waiting.  The lease lasts twice the POST's timeout plus a
margin, longer than an attempt can take; every attempt is recorded, and one that
outlived its lease leaves what follows a failure to the claim that took it over.  Delivery is at least once: an invoicing system that
answered 2xx but whose answer was lost gets the notice again, with the same
``X-Tally-Delivery`` id to recognise it by.

The clock and the POST are injected (``Deliverer``), so the tests observe the
backoff through the recorded attempts rather than by waiting.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import hmac
import logging
import os
import secrets
import threading
from collections.abc import Callable

import requests
import sqlalchemy as sa
from oslo_config import cfg
from sqlalchemy.orm import Session, sessionmaker

from reporting.billing import billing_metrics
from reporting.clock import utcnow
from reporting.db import writes
from reporting.db.handoff_models import WebhookAttempt, WebhookDelivery
from tally_common.config_check import redact_url

LOG = logging.getLogger(__name__)

LEASE_MARGIN = dt.timedelta(seconds=60)
_ERROR_LIMIT = 1000  # characters of an error kept per attempt


@dataclasses.dataclass(frozen=True)
class Settings:
    """``[handoff]``, as the worker reads it."""

    url: str
    secret: str
    timeout_s: float = 10.0
    base_s: float = 30.0
    max_s: float = 3600.0
    max_attempts: int = 12
    poll_s: float = 5.0

    @property
    def lease(self) -> dt.timedelta:
        # connect + read timeouts, then the margin: longer than one attempt can take
        return dt.timedelta(seconds=2 * self.timeout_s) + LEASE_MARGIN

    def delay(self, attempts: int) -> dt.timedelta:
        """The wait after the ``attempts``-th failed attempt."""
        # 2^60 × any base is past any retry_max_s (and a larger power overflows a float)
        return dt.timedelta(seconds=min(self.base_s * 2 ** min(attempts - 1, 60), self.max_s))


class HandoffConfigError(ValueError):
    """``[handoff]`` names a webhook the service cannot sign (a configuration error)."""


def settings(conf: cfg.ConfigOpts) -> Settings | None:
    """The worker's settings, None without a webhook URL; raises HandoffConfigError for a
    URL without a secret (an unsigned notice cannot be trusted by its receiver)."""
    group = conf.handoff
    if not group.webhook_url:
        return None
    if not group.webhook_secret:
        raise HandoffConfigError("[handoff] webhook_url is set but webhook_secret is not: "
                                 "every notice is signed with it")
    return Settings(group.webhook_url, group.webhook_secret, group.webhook_timeout_s,
                    group.retry_base_s, group.retry_max_s, group.max_attempts,
                    group.poll_interval_s)


def signature(secret: str, body: bytes) -> str:
    """``X-Tally-Signature``: ``sha256=`` and the hex HMAC-SHA256 of the body's bytes."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


# (url, body, headers, timeout) -> the answer's HTTP status; raises OSError or
# requests' RequestException when no answer came.
Post = Callable[[str, bytes, dict[str, str], float], int]


def post_with_requests(url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
    response = requests.post(url, data=body, headers=headers, timeout=timeout,
                             allow_redirects=False)
    response.close()
    return response.status_code


@dataclasses.dataclass(frozen=True)
class _Claim:
    id: int
    token: str
    event: str
    body: str


class Deliverer:
    """Delivers the due deliveries of one database; ``run_once`` is one pass,
    ``start`` runs passes in a daemon thread every ``poll_s``."""

    def __init__(self, factory: sessionmaker[Session], config: Settings, *,
                 clock: Callable[[], dt.datetime] = utcnow,
                 post: Post = post_with_requests) -> None:
        self.factory = factory
        self.config = config
        self.clock = clock
        self.post = post
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._owner: int | None = None
        self._lock = threading.Lock()

    def ensure_running(self) -> None:
        """Start the thread in this process unless it runs here already (a forked
        worker does not inherit its parent's thread)."""
        if self._owner == os.getpid():  # every request asks: no lock once running
            return
        with self._lock:
            if self._owner == os.getpid():
                return
            self._owner = os.getpid()
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._loop, name="tally-webhook-delivery",
                                            daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 30.0) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
            self._owner = None
            self._stop.set()
        if thread is not None and thread.is_alive():
            thread.join(timeout)

    def _loop(self) -> None:
        stop = self._stop
        while not stop.is_set():
            failure: Exception | None = None
            try:
                self.run_once(stop)
            except Exception as exc:  # noqa: BLE001 - the worker outlives a bad pass
                failure = exc
            if failure is not None:
                LOG.warning("webhook delivery pass failed: %s", failure)
            stop.wait(self.config.poll_s)

    def run_once(self, stop: threading.Event | None = None) -> int:
        """Attempt every delivery due now, one claim at a time; the attempts made."""
        made = 0
        while stop is None or not stop.is_set():
            claim = self._claim()
            if claim is None:
                return made
            self._attempt(claim)
            made += 1
        return made

    def _claim(self) -> _Claim | None:
        now = self.clock()
        model = WebhookDelivery
        free = sa.or_(model.lease_until.is_(None), model.lease_until < now)
        due = [model.status == "pending", model.next_attempt_at <= now, free]
        with self.factory() as session:
            # A look first, without the write lock a claim takes (SQLite has one): most
            # passes find nothing due.
            if session.execute(sa.select(model.id).where(*due).limit(1)).first() is None:
                return None
        with self.factory() as session:
            writes.of(session).begin_write(session)
            # SKIP LOCKED where the database has row locks (SQLAlchemy renders no
            # FOR UPDATE on SQLite, whose one writer is this transaction).
            found = session.execute(
                sa.select(model.id, model.event, model.body).where(*due)
                .order_by(model.next_attempt_at, model.id).limit(1)
                .with_for_update(skip_locked=True)).first()
            if found is None:
                session.rollback()
                return None
            token = secrets.token_hex(16)
            taken = session.execute(  # type: ignore[attr-defined]
                sa.update(model).where(model.id == found.id, *due)
                .values(lease_until=now + self.config.lease, leased_by=token)).rowcount
            session.commit()
        if not taken:
            return None
        return _Claim(found.id, token, found.event, found.body)

    def _attempt(self, claim: _Claim) -> None:
        body = claim.body.encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "tally-reporting",
            "X-Tally-Delivery": str(claim.id),
            "X-Tally-Event": claim.event,
            "X-Tally-Signature": signature(self.config.secret, body),
        }
        status: int | None = None
        error: str | None = None
        try:
            status = self.post(self.config.url, body, headers, self.config.timeout_s)
        except (OSError, requests.RequestException) as exc:
            # Listed to admins: a password in the URL is not repeated there.
            url = self.config.url
            error = f"{type(exc).__name__}: {exc}".replace(url, redact_url(url))[:_ERROR_LIMIT]
        if status is not None and not 200 <= status < 300:
            error = f"HTTP {status}"
        self._record(claim, status, error)

    def _record(self, claim: _Claim, status: int | None, error: str | None) -> None:
        now = self.clock()
        model = WebhookDelivery
        with self.factory() as session:
            writes.of(session).begin_write(session)
            row = session.execute(sa.select(model).where(model.id == claim.id)
                                  .with_for_update()).scalar_one()
            row.attempts += 1
            session.add(WebhookAttempt(delivery_id=row.id, number=row.attempts,
                                       attempted_at=now, status_code=status, error=error))
            # Held past its lease and claimed again, the other claim decides what
            # follows a failure; a 2xx by either delivers it.
            ours = row.leased_by == claim.token
            if ours:
                row.lease_until = None
                row.leased_by = None
            outcome = "delivered" if error is None else "retried"
            if row.status != "pending":
                pass
            elif error is None:
                row.status = "delivered"
                row.delivered_at = now
            elif not ours:
                LOG.warning("webhook delivery %s: an attempt outlived its lease", row.id)
            elif row.attempts - row.retry_from >= self.config.max_attempts:
                row.status = "failed"
                outcome = "failed"
                LOG.warning("webhook delivery %s of %s %s failed after %s attempts: %s",
                            row.id, row.cloud, row.period, row.attempts, error)
            else:
                row.next_attempt_at = now + self.config.delay(row.attempts - row.retry_from)
            cloud = row.cloud
            session.commit()
        billing_metrics.webhook_attempt(cloud, outcome)


def redeliver(factory: sessionmaker[Session], delivery_id: int, now: dt.datetime) -> bool:
    """Make a delivery due now for a new round of attempts, whatever its status; False
    while a worker is posting it (a live lease)."""
    model = WebhookDelivery
    with factory() as session:
        writes.of(session).begin_write(session)
        changed = session.execute(  # type: ignore[attr-defined]
            sa.update(model)
            .where(model.id == delivery_id,
                   sa.or_(model.lease_until.is_(None), model.lease_until < now))
            .values(status="pending", next_attempt_at=now, retry_from=model.attempts,
                    delivered_at=None, lease_until=None, leased_by=None)).rowcount
        session.commit()
    return bool(changed)
