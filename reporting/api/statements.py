"""``GET /v1/statements``: a project's statement of a period, or the per-project
summaries of a period (role ``read``; a ``project_reader`` reads its project's only:
its statement, the summaries list filtered to it, another ``project_id`` 403).
``Accept: text/csv`` answers CSV.  A period that has not started is 409.

Parameters: ``cloud`` and ``period`` (``YYYY-MM``) required; ``project_id``;
``limit``/``marker`` for the summaries.  Semantics in ``docs/statements.md``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from flask import Blueprint, Response, request

from reporting import pagination
from reporting.api.billing_common import cloud_hidden, period_name, require_started
from reporting.api.errors import ApiError
from reporting.api.project_scope import requested_project, require_project_read, visible_projects
from reporting.api.read_limits import expensive_read
from reporting.billing import periods, service, versions
from reporting.billing import statements as billing_statements
from reporting.billing.observed import BeforeHistory
from reporting.billing.pricelist import DEFAULT_LIST
from reporting.clock import utcnow
from reporting.db.session import db_session
from reporting.queries import params

bp = Blueprint("statements", __name__)

_PARAMS = frozenset({"cloud", "period", "project_id", "limit", "marker"})
LINE_FIELDS = ("resource_type", "resource_id", "state", "size", "start", "end", "event_id",
               "price_list_version", "quantity", "unit", "rate", "modifier", "zero_rated",
               "amount_unrounded", "amount", "unrated")
SUMMARY_FIELDS = ("project_id", "subtotal", "adjustments_total", "total", "unrated_lines",
                  "number")
# A statement's CSV: what the row is, a member's value, then the lines' and the
# adjustments' fields (docs/statements.md gives the layout).
CSV_FIELDS = ("record", "value", *LINE_FIELDS, "period", "event_ids")
_TAG = "statements"
# Columns (and statement records, whose ``value`` they are) holding a number Tally
# wrote: never neutralised, so a credit stays the number ``-1.50``.
NUMERIC_FIELDS = frozenset({"quantity", "rate", "modifier", "amount_unrounded", "amount",
                            "subtotal", "adjustments_total", "total", "unrated_lines",
                            "number"})
_NUMBER = re.compile(r"^-?[0-9]+(\.[0-9]+)?\Z")
# A text cell a spreadsheet would read as a formula (OWASP, "CSV Injection"): ids,
# flavors and names come from ingest clients.  Such a cell is written after an
# apostrophe, and so is one that starts with an apostrophe: dropping the leading
# apostrophe of a text cell always gives the value back.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def wants_csv() -> bool:
    """Whether the request prefers CSV to JSON (``Accept: text/csv``)."""
    best = request.accept_mimetypes.best_match(["application/json", "text/csv"])
    return best == "text/csv" and request.accept_mimetypes["text/csv"] > request.accept_mimetypes[
        "application/json"]


def cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def neutralised(value: Any, numeric: bool) -> Any:
    """A cell as written: a number as it is, text starting like a formula (or with an
    apostrophe) after an apostrophe."""
    if not isinstance(value, str) or (numeric and _NUMBER.match(value)):
        return value
    return "'" + value if value.startswith(FORMULA_STARTS) else value


def csv_text(rows: list[dict[str, Any]], fields: tuple[str, ...],
             numeric: frozenset[str] = frozenset()) -> str:
    """``rows`` as CSV under the header ``fields``, text neutralised; a number Tally
    wrote (a column of NUMERIC_FIELDS or ``numeric``) is written as it is."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(fields)
    for row in rows:
        numbers = NUMERIC_FIELDS | numeric | (
            {"value"} if row.get("record") in NUMERIC_FIELDS else set())
        writer.writerow([neutralised(cell(row[field]), field in numbers) for field in fields])
    return out.getvalue()


# The columns of a line a tier line fills (the rest of it is in its ``value``).
_TIER_COLUMNS = ("resource_type", "price_list_version", "quantity", "unit", "rate",
                 "amount_unrounded", "amount")


def tier_row(tier: dict[str, Any], value: bool = True) -> dict[str, Any]:
    """A tier line as a CSV row (``record`` ``tier``): the columns it shares with a
    line, and in ``value`` (where the CSV has one) the whole tier line as JSON."""
    row = {"record": "tier", **{name: tier[name] for name in _TIER_COLUMNS}}
    return {**row, "value": tier} if value else row


def statement_csv(document: dict[str, Any]) -> str:
    """A statement as CSV, every member of its JSON in the JSON's order: one row per
    line (``record`` ``line``), per tier line (``tier``), per adjustment
    (``adjustment``), and per other member
    (``record`` its name, ``value`` its value): the same data, nothing left out."""
    rows: list[dict[str, Any]] = []
    blank = dict.fromkeys(CSV_FIELDS)
    for name, value in document.items():
        if name == "lines":
            rows.extend({**blank, "record": "line", **line} for line in value)
        elif name == "tiers":
            rows.extend({**blank, **tier_row(item)} for item in value)
        elif name == "adjustments":
            rows.extend({**blank, "record": "adjustment", **item} for item in value)
        else:
            rows.append({**blank, "record": name, "value": value})
    return csv_text(rows, CSV_FIELDS)


def _as_for_an_unknown_cloud(cloud: str, project_id: str, period: str) -> str:
    """A project reader's statement of a cloud its project has no history in: what a
    cloud Tally does not know answers (nothing closed, priced by ``default``), so
    whether the cloud exists, has closed the month or has prices of its own is not
    told while ``GET /v1/clouds`` is refused."""
    shared = versions.timeline(db_session(), DEFAULT_LIST)
    return billing_statements.text(billing_statements.document(
        cloud=cloud, project_id=project_id, period=period,
        currency_code=billing_statements.currency(shared, periods.parse(period)[1]),
        closed=False, computed_at=utcnow(), lines=[], adjustments=[]))


@bp.get("/v1/statements")
@require_project_read
@expensive_read
def get_statements() -> Response:
    args = request.args
    params.only(args, _PARAMS)
    cloud = params.text(args, "cloud")
    if cloud is None:
        raise pagination.bad_request("cloud is required")
    period = period_name(args.get("period"))
    project_id = requested_project(params.text(args, "project_id"))
    visible = visible_projects()
    session = db_session()
    now = utcnow()
    require_started(period, now)
    hidden = cloud_hidden(session, cloud)
    if not hidden:
        try:
            service.require_billable(session, cloud, period)
        except BeforeHistory as exc:
            raise ApiError(409, "before_history", str(exc)) from None
    if project_id is not None:
        if "limit" in args or "marker" in args:
            raise pagination.bad_request("limit and marker apply to the summaries only")
        if hidden:
            text = _as_for_an_unknown_cloud(cloud, project_id, period)
        else:
            text = service.statement_text(session, cloud, project_id, period, now)
        if wants_csv():
            return Response(statement_csv(json.loads(text)), mimetype="text/csv")
        return Response(text, mimetype="application/json")
    limit = pagination.parse_limit(args)
    after = None
    if "marker" in args:
        (decoded,) = pagination.decode_marker(_TAG, ["str"], args["marker"])
        after = str(decoded)
    if visible is None:
        items, more = service.summaries(session, cloud, period, after, limit, now)
    else:
        items, more = service.project_summaries(session, cloud, period, visible, after, limit,
                                                now)
    marker = pagination.encode_marker(_TAG, [items[-1]["project_id"]]) if more else None
    if wants_csv():
        response = Response(csv_text(items, SUMMARY_FIELDS), mimetype="text/csv")
        if marker is not None:
            response.headers["X-Next-Marker"] = marker
        return response
    body = pagination.list_body(items, marker, cloud=cloud, period=period)
    return Response(json.dumps(body, separators=(",", ":")), mimetype="application/json")
