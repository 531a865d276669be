"""``POST /v1/rejected-events``: a collector files what it parked into the dead letter.

A collector parks on its disk what it can neither buffer nor deliver (an event the
API refused as a whole request, a notification it could not map or serialise) and
files each item here, with the reason it was parked, once the API answers.  Each
item carries the collector's key for it: a key filed before answers ``duplicate``
and files nothing, so a retry after a lost answer is harmless.  The row is an
ordinary dead-letter row: listed, and replayed through ingest like any other.
"""

from __future__ import annotations

import re
from typing import Any

from flask import Blueprint, jsonify

from mapping.event import MAX_BATCH
from reporting import dead_letter
from reporting.api.auth import require_role
from reporting.api.errors import ApiError
from reporting.api.jsonbody import batch_of, json_object, strict_loads, too_deep
from reporting.db.session import app_sessionmaker
from reporting.pagination import storable_text
from reporting.validation import MAX_REASON_LEN

bp = Blueprint("filing", __name__)

# Every row filed here has its reason under this prefix (?reason=parked: lists them),
# so a client cannot file a reason that reads like one of ingest's.
REASON_PREFIX = "parked: "
_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,255}\Z")
_MEMBERS = ("key", "raw", "reason")


def _bad(message: str) -> ApiError:
    return ApiError(400, "bad_request", message)


def _item(index: int, item: Any) -> tuple[str, str, str]:
    where = f"items[{index}]"
    if not isinstance(item, dict) or set(item) != set(_MEMBERS):
        raise _bad(f"{where} must be an object of exactly {', '.join(_MEMBERS)}")
    key, raw, reason = (item[name] for name in _MEMBERS)
    if not isinstance(key, str) or not _KEY.match(key):
        raise _bad(f"{where}.key must be 1 to 255 characters of A-Z, a-z, 0-9, '.', '_', "
                   "':' and '-'")
    if not isinstance(raw, str) or not raw:
        raise _bad(f"{where}.raw must be a non-empty string: the item's text as parked")
    if (not isinstance(reason, str) or not 1 <= len(reason) <= MAX_REASON_LEN
            or not storable_text(reason)):
        raise _bad(f"{where}.reason must be 1 to {MAX_REASON_LEN} characters, without NUL "
                   "or an unpaired surrogate")
    return key, raw, reason


def items_of(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The ``(key, raw, reason)`` of each item of a request body, checked as
    docs/reporting-api.md states (400 for anything else, 413 past 1000 items)."""
    items = batch_of(body, "items", limit=MAX_BATCH)
    return [_item(index, item) for index, item in enumerate(items)]


def item_value(raw: str) -> Any:
    """What the dead letter keeps of a parked text: the JSON document it holds, read
    as ingest reads a body (so a replay ingests exactly that event), else the text
    itself (a notification holding NaN is no JSON document: kept as a string)."""
    try:
        value = strict_loads(raw)
    except (ValueError, RecursionError):
        return raw
    return raw if too_deep(value) else value


@bp.post("/v1/rejected-events")
@require_role("ingest")
def file_rejected() -> Any:
    items = items_of(json_object())
    outcomes = dead_letter.file_parked(
        app_sessionmaker(),
        [(key, item_value(raw), REASON_PREFIX + reason) for key, raw, reason in items])
    results = [{"index": index, "key": key, "id": row_id,
                "status": "filed" if new else "duplicate"}
               for index, ((key, _, _), (row_id, new)) in enumerate(
                   zip(items, outcomes, strict=True))]
    filed = sum(1 for result in results if result["status"] == "filed")
    return jsonify({"results": results, "filed": filed, "duplicates": len(results) - filed})
