"""The simulation's own endpoints: ``/_sim/clock``, ``/_sim/truth``, ``/_sim/faults``.

These have no OpenStack counterpart and no authentication: they exist for tests,
the demo and the driver loop on loopback.
"""

from __future__ import annotations

from flask import Blueprint, Response, request

from simcloud.api import common
from simcloud.faults import FaultError
from simcloud.world import ClockError

bp = Blueprint("sim", __name__, url_prefix="/_sim")


def _error(message: str, code: int = 400) -> Response:
    return common.json_response({"error": {"code": code, "message": message}}, code)


@bp.get("/clock")
def get_clock() -> Response:
    return common.json_response(common.world().clock_document())


@bp.post("/clock")
def move_clock() -> Response:
    body = request.get_json(silent=True)
    if not isinstance(body, dict) or set(body) != {"at"} or not isinstance(body["at"], str):
        return _error('the body must be {"at": "<RFC 3339 instant>"}')
    try:
        report = common.world().advance_to(body["at"])
    except ClockError as exc:
        return _error(str(exc), 409 if "only moves forward" in str(exc) else 400)
    return common.json_response(dict(common.world().clock_document(), moved=report))


@bp.get("/truth")
def truth() -> Response:
    args = request.args
    live_raw = args.get("live")
    live = None
    if live_raw is not None:
        live = common.bool_param(live_raw)
        if live is None:
            return _error(f"live must be true or false, got {live_raw!r}")
    w = common.world()
    try:
        records = w.truth(args.get("at"), args.get("resource_type"), live)
    except (ClockError, ValueError) as exc:
        return _error(str(exc))
    at = args.get("at") or w.clock_document()["at"]
    return common.json_response({"at": at, "resources": records,
                                 "volume_types": w.volume_types()})


@bp.get("/faults")
def get_faults() -> Response:
    return common.json_response(common.world().faults.document())


@bp.post("/faults")
def set_faults() -> Response:
    faults = common.world().faults
    try:
        faults.apply_document(request.get_json(silent=True))
    except FaultError as exc:
        return _error(str(exc))
    return common.json_response(faults.document())


@bp.delete("/faults")
def clear_faults() -> Response:
    faults = common.world().faults
    faults.clear()
    return common.json_response(faults.document())
