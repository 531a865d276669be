"""``POST /internal/sync/{cloud}`` and ``GET /v1/sync-runs`` (docs/reconciliation.md).

The sync is synchronous: the caller learns the outcome from the response.  200
with the run's summary; 400 for a told instant that cannot be the cloud's (beyond a
simulated cloud's clock); 404 for a cloud the clouds file does not name; 409 while
another run of the cloud holds its lease, or (``not_reconciled``, no run recorded) for
a cloud its entry collects but does not reconcile (no ``os_cloud``); 503 when a simulated cloud's clock does not
answer; 500 when the run recorded any error,
answered with the run id only (the reasons carry platform detail and are read back
from ``sync_runs``).
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

import sqlalchemy as sa
from flask import Blueprint, Flask, Response, current_app, jsonify, request
from oslo_config import cfg

from mapping.event import TimestampError, format_timestamp, parse_timestamp
from reporting import pagination
from reporting.api.auth import require_role
from reporting.api.clouds import set_known_clouds
from reporting.api.errors import ApiError
from reporting.clock import utcnow
from reporting.db.models import SyncRun
from reporting.db.session import SESSIONMAKER_KEY, db_session
from reporting.queries import params
from reporting.sync.clouds import load_clouds_file
from reporting.sync.runner import CloudBusy, NotReconciled, SyncService, UnknownCloud
from reporting.sync.told_instant import ClockUnreadable, ToldInstantRefused, check_told_instant

SERVICE_KEY = "tally.sync"
MARKER_TAG = "sync-runs"
_LIST_PARAMS = frozenset({"cloud", "limit", "marker"})

bp = Blueprint("sync", __name__)
LOG = logging.getLogger(__name__)


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    """Read and check the clouds file; a bad one raises and the service does not start."""
    clouds = load_clouds_file(conf.sync.clouds_file)
    set_known_clouds(app, frozenset(clouds) if conf.sync.clouds_file else None)
    app.extensions[SERVICE_KEY] = SyncService(conf, app.extensions[SESSIONMAKER_KEY], clouds)


def _service() -> SyncService:
    return current_app.extensions[SERVICE_KEY]


@bp.post("/internal/sync/<cloud>")
@require_role("admin")
def sync_cloud(cloud: str) -> tuple[Response, int]:
    at = None
    full = _full_param(request.args.get("full"))
    raw = request.args.get("at")
    if raw is not None:
        try:
            at = parse_timestamp(raw).replace(tzinfo=None)
        except TimestampError as exc:
            raise ApiError(400, "bad_request", f"at: {exc}") from None
    entry = _service().clouds.get(cloud)
    if entry is not None and not entry.reconciled:
        raise ApiError(409, "not_reconciled",
                       f"cloud {cloud!r} is collected but not reconciled: its clouds-file "
                       "entry names no credentials (adapter_config os_cloud); no run is "
                       "recorded")
    if entry is not None and entry.clock == "simulated" and at is None:
        raise ApiError(400, "bad_request",
                       f"cloud {cloud!r} runs on a simulated clock (clock: simulated in the "
                       "clouds file): tell the run its instant with ?at= (tally-sync --at T, "
                       "T from the simulated cloud's GET /_sim/clock)")
    if entry is not None and at is not None and entry.clock == "wall":
        _refuse_future(at)
    if entry is not None and at is not None:
        try:
            check_told_instant(entry, at)
        except ToldInstantRefused as exc:
            raise ApiError(400, "bad_request", f"at: {exc}") from None
        except ClockUnreadable as exc:
            # No run is booked at an instant that cannot be checked.
            LOG.warning("sync of %s refused: its simulated clock did not answer: %s", cloud, exc)
            raise ApiError(503, "clock_unavailable",
                           f"the simulated clock of cloud {cloud!r} did not answer: {exc}") from None
    try:
        result = _service().run(cloud, at, full)
    except UnknownCloud:
        raise ApiError(404, "not_found", f"the clouds file names no cloud {cloud!r}") from None
    except CloudBusy:
        raise ApiError(409, "conflict", f"another sync run of {cloud!r} is in progress") from None
    except NotReconciled:
        raise ApiError(409, "not_reconciled",
                       f"cloud {cloud!r} is collected but not reconciled") from None
    if result.status != "completed":
        LOG.warning("sync run %s of %s failed: %s", result.run_id, cloud,
                    "; ".join(str(reason) for reason in result.stats.get("errors", [])))
        body = {"error": {"code": "sync_failed",
                          "message": f"sync run {result.run_id} failed; see GET /v1/sync-runs"},
                "run_id": result.run_id}
        return jsonify(body), 500
    return jsonify(result.summary()), 200


def _full_param(raw: str | None) -> bool:
    """``?full=true``: a full run now, whatever [sync] full_listing_interval_s says."""
    if raw is None:
        return False
    if raw.lower() in ("1", "true", "yes"):
        return True
    if raw.lower() in ("0", "false", "no"):
        return False
    raise ApiError(400, "bad_request", f"full: {raw!r} is neither true nor false")


def _refuse_future(at: dt.datetime) -> None:
    """A wall-clock cloud's run cannot be told an instant past the API's clock plus
    ``[ingest] max_future_skew_s``: its corrections would be refused, and the run would
    top the run list (reporting.future)."""
    skew = dt.timedelta(seconds=int(_service().conf.ingest.max_future_skew_s))
    now = utcnow()
    if at > now + skew:
        raise ApiError(400, "bad_request",
                       f"at: {format_timestamp(at)} is after the API's clock "
                       f"({format_timestamp(now)}) by more than [ingest] max_future_skew_s "
                       f"({skew.total_seconds():.0f} s): a run cannot observe an instant that "
                       "has not come")


def _render(run: SyncRun) -> dict[str, Any]:
    return {
        "id": run.id,
        "cloud": run.cloud,
        "status": run.status,
        "kind": run.kind,
        "started_at": format_timestamp(run.started_at),
        "completed_at": format_timestamp(run.completed_at) if run.completed_at else None,
        "stats": run.stats,
    }


@bp.get("/v1/sync-runs")
@require_role("read")
def list_sync_runs() -> Response:
    """Newest first (by started_at, then id); ``cloud`` filters, ``limit``/``marker`` page."""
    params.only(request.args, _LIST_PARAMS)
    limit = pagination.parse_limit(request.args)
    query = sa.select(SyncRun)
    cloud = params.text(request.args, "cloud")
    if cloud:
        query = query.where(SyncRun.cloud == cloud)
    marker = request.args.get("marker")
    if marker:
        started, run_id = pagination.decode_marker(MARKER_TAG, ("datetime", "str"), marker)
        query = query.where(sa.or_(
            SyncRun.started_at < started,
            sa.and_(SyncRun.started_at == started, SyncRun.id < run_id),
        ))
    query = query.order_by(SyncRun.started_at.desc(), SyncRun.id.desc()).limit(limit + 1)
    runs = list(db_session().execute(query).scalars())
    kept, next_marker = pagination.page(runs, limit, MARKER_TAG,
                                        lambda run: (run.started_at, run.id))
    return jsonify(pagination.list_body([_render(run) for run in kept], next_marker))
