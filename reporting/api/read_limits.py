"""What one expensive read may cost, and how many run at once (docs/deployment.md,
"Read load").

A view decorated with :func:`expensive_read` (usage, statements, the inventory, a
resource's history) runs only while it holds one of the worker's ``[api]
read_threads`` read slots (half of ``[api] threads`` by default): the other threads
of the worker stay free for ``/healthz``, ``/readyz``, ingest and the cheap reads, so a
burst of heavy readers never queues a liveness probe or an ingest batch behind
them.  A read finding every slot taken is answered at once, 503
``read_capacity_exhausted`` with ``Retry-After``, instead of waiting in a thread.

Each statement such a read runs is cancelled once it has run ``[api]
read_statement_timeout_s`` (PostgreSQL: ``SET LOCAL statement_timeout``; SQLite: a
progress handler), answered 503 ``query_too_expensive``; the worker goes on serving.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from flask import Flask, Response, current_app, g, request
from oslo_config import cfg
from prometheus_client import Counter
from sqlalchemy import exc as sa_exc

from reporting.api.errors import ApiError
from reporting.db import writes
from reporting.db.session import db_session

LOG = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

EXTENSION_KEY = "tally.read_limits"
RETRY_AFTER_S = 1

api_read_opts: list[cfg.Opt] = [
    cfg.FloatOpt(
        "read_statement_timeout_s",
        default=30.0,
        min=0.0,
        help="Seconds one database statement of an expensive read (usage, statements, "
        "the inventory, a resource's history) may run before the database cancels it; "
        "the request is then answered 503 query_too_expensive (narrow the period, "
        "filter by cloud or project, or page with a smaller limit). PostgreSQL: "
        "statement_timeout for the request's transactions; SQLite: a progress handler. "
        "0 sets no limit. Must be below [api] timeout, or gunicorn kills the worker "
        "first.",
    ),
    cfg.IntOpt(
        "read_threads",
        min=1,
        help="Threads of each worker that may serve expensive reads at the same time; "
        "the worker's other threads stay free for health probes, ingest and cheap "
        "reads. An expensive read finding them all busy is answered at once, 503 "
        "read_capacity_exhausted with Retry-After. Default: half of [api] threads "
        "(at least 1). At most [api] threads; equal to it reserves nothing.",
    ),
]

REFUSED_READS = Counter(
    "tally_read_refusals",
    "Expensive reads refused, by reason (read_capacity_exhausted: every read thread of "
    "the worker was busy; query_too_expensive: a statement ran past [api] "
    "read_statement_timeout_s).",
    ["reason"],
)


class ReadLimits:
    """One worker's read slots and statement limit."""

    def __init__(self, threads: int, statement_timeout_s: float) -> None:
        self.threads = threads
        self.statement_timeout_s = statement_timeout_s
        self._slots = threading.BoundedSemaphore(threads)

    def try_acquire(self) -> bool:
        return self._slots.acquire(blocking=False)

    def release(self) -> None:
        self._slots.release()


def limits_from_conf(conf: cfg.ConfigOpts) -> ReadLimits:
    """The limits ``conf`` asks for; ValueError for a combination that cannot work."""
    threads = conf.api.read_threads
    if threads is None:
        threads = max(1, conf.api.threads // 2)
    elif threads > conf.api.threads:
        raise ValueError(f"[api] read_threads = {threads} is more than [api] threads = "
                         f"{conf.api.threads}")
    timeout_s = conf.api.read_statement_timeout_s
    if timeout_s and timeout_s >= conf.api.timeout:
        raise ValueError(f"[api] read_statement_timeout_s = {timeout_s:g} must be below "
                         f"[api] timeout = {conf.api.timeout} (gunicorn would kill the "
                         "worker before the database cancels the statement)")
    return ReadLimits(threads, timeout_s)


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    app.extensions[EXTENSION_KEY] = limits_from_conf(conf)

    @app.after_request
    def _retry_after(response: Response) -> Response:
        if g.pop("tally_read_retry_after", False):
            response.headers["Retry-After"] = str(RETRY_AFTER_S)
        return response


def _capacity_exhausted(limits: ReadLimits) -> ApiError:
    REFUSED_READS.labels(reason="read_capacity_exhausted").inc()
    g.tally_read_retry_after = True
    return ApiError(
        503, "read_capacity_exhausted",
        f"every thread this server lets serve expensive reads is busy ({limits.threads} "
        f"per worker, [api] read_threads); retry in {RETRY_AFTER_S} s")


def _too_expensive(limits: ReadLimits) -> ApiError:
    REFUSED_READS.labels(reason="query_too_expensive").inc()
    return ApiError(
        503, "query_too_expensive",
        f"the query ran longer than {limits.statement_timeout_s:g} s ([api] "
        "read_statement_timeout_s) and was cancelled; narrow the period (from/to), "
        "filter by cloud or project_id, or ask for smaller pages (limit)")


def expensive_read(view: F) -> F:
    """Run ``view`` in one of the worker's read slots, its statements time-limited."""

    @functools.wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        limits: ReadLimits = current_app.extensions[EXTENSION_KEY]
        if not limits.try_acquire():
            raise _capacity_exhausted(limits)
        try:
            if limits.statement_timeout_s:
                session = db_session()
                writes.of(session).limit_statement_time(session, limits.statement_timeout_s)
            return view(*args, **kwargs)
        except sa_exc.OperationalError as exc:
            if not writes.of(db_session()).statement_timed_out(exc):
                raise
        finally:
            limits.release()
        # Only a cancelled statement gets here; logged outside the except block (oslo.log
        # would add the exception to the line).
        LOG.warning("%s %s: a statement was cancelled after %g s ([api] "
                    "read_statement_timeout_s)", request.method, request.path,
                    limits.statement_timeout_s)
        raise _too_expensive(limits)

    return wrapper  # type: ignore[return-value]
