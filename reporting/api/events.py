"""``POST /v1/events``: the event sink (docs/reporting-api.md)."""

from __future__ import annotations

import json
from typing import Any

import orjson
from flask import Blueprint, Flask, Response, current_app
from oslo_config import cfg

from mapping.event import MAX_BATCH
from reporting.api.auth import require_role
from reporting.api.clouds import known_clouds
from reporting.api.errors import ApiError
from reporting.api.jsonbody import json_object
from reporting.db.session import app_sessionmaker
from reporting.future import FutureClock
from reporting.ingest import ingest
from reporting.sync.clouds import load_clouds_file

bp = Blueprint("events", __name__)

api_body_opts: list[cfg.Opt] = [
    cfg.IntOpt(
        "max_body_bytes",
        default=10 * 1024 * 1024,
        min=1024,
        help="Largest request body accepted, in bytes; a larger one is answered 413. "
        f"The default leaves room for a batch of {MAX_BATCH} events.",
    ),
]

ingest_opts: list[cfg.Opt] = [
    cfg.BoolOpt(
        "require_size_schema",
        default=False,
        help="Strict mode: refuse an event carrying a size when no size schema is "
        "registered for its (platform, resource_type). In both modes a registered "
        "schema is enforced. Environment alias: TALLY_INGEST_REQUIRE_SIZE_SCHEMA.",
    ),
]


def init_app(app: Flask, conf: cfg.ConfigOpts) -> None:
    app.config["MAX_CONTENT_LENGTH"] = conf.api.max_body_bytes
    app.config["TALLY_REQUIRE_SIZE_SCHEMA"] = conf.ingest.require_size_schema
    # The clouds file says which clouds run on a simulated clock (a bad file stops
    # the service here as in the sync's own reading).
    app.extensions[_FUTURE_KEY] = FutureClock.from_conf(
        conf, load_clouds_file(conf.sync.clouds_file))


_FUTURE_KEY = "tally.future"


def future_clock() -> FutureClock:
    """The bound ingest and replay apply to how far ahead an event is dated."""
    clock: FutureClock = current_app.extensions[_FUTURE_KEY]
    return clock


def events_of(body: dict[str, Any]) -> list[Any]:
    """The ``events`` array of a request body, checked as docs/reporting-api.md states."""
    unknown = sorted(set(body) - {"events"})
    if unknown:
        raise ApiError(400, "bad_request", f"unknown member(s) in the body: {', '.join(unknown)}")
    events = body.get("events")
    if not isinstance(events, list):
        raise ApiError(400, "bad_request", "the body must hold an 'events' array")
    if len(events) > MAX_BATCH:
        raise ApiError(
            413, "too_many_events", f"{len(events)} events in one request; at most {MAX_BATCH}"
        )
    return events


@bp.post("/v1/events")
@require_role("ingest")
def post_events() -> Any:
    events = events_of(json_object())
    results = ingest(
        app_sessionmaker(),
        events,
        require_size_schema=current_app.config["TALLY_REQUIRE_SIZE_SCHEMA"],
        known_clouds=known_clouds(),
        future=future_clock(),
    )
    counts = {"stored": 0, "duplicate": 0, "rejected": 0}
    rendered = []
    for result in results:
        counts[result.status] += 1
        entry: dict[str, Any] = {"index": result.index, "event_id": result.event_id,
                                 "status": result.status}
        if result.reason is not None:
            entry["reason"] = result.reason
        rendered.append(entry)
    return _json_response({"results": rendered, "stored": counts["stored"],
                           "duplicates": counts["duplicate"], "rejected": counts["rejected"]})


def _json_response(body: dict[str, Any]) -> Response:
    """``body`` as JSON, written by orjson (a tenth of the standard library's time for
    1000 results); a refused item's id or reason may hold a lone surrogate, which only
    the standard library writes (escaped)."""
    try:
        data = orjson.dumps(body)
    except orjson.JSONEncodeError:
        data = json.dumps(body).encode()
    return current_app.response_class(data, mimetype="application/json")
