"""``/v1/accounts``: billing accounts, their dated memberships and their statements.

Adding an account or a membership is ``admin``; reading them and an account's
statement is ``read`` (a project reader reads its project's statement only).
``GET /v1/accounts/{id}/statement?period=P`` answers JSON, or CSV with
``Accept: text/csv``.  Semantics in ``docs/statements.md``, "Billing accounts".
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from flask import Blueprint, Response, jsonify, request

from reporting import pagination
from reporting.api.auth import require_role
from reporting.api.billing_common import caller_name, period_name
from reporting.api.errors import ApiError
from reporting.api.jsonbody import json_object
from reporting.api.statements import LINE_FIELDS, NUMERIC_FIELDS, neutralised
from reporting.billing import account_statements, accounts, locks, periods
from reporting.clock import utcnow
from reporting.db import writes
from reporting.db.session import db_session
from reporting.queries import params

bp = Blueprint("accounts", __name__)
_TAG = "accounts"
SECTION_FIELDS = ("cloud", "project_id", "membership", "from", "to", "currency")
# An account statement's CSV: what the row is, a member's value, the section it
# belongs to, then the lines' and the adjustments' fields.
ACCOUNT_CSV_FIELDS = ("record", "value", *SECTION_FIELDS, *LINE_FIELDS, "period",
                      "event_ids")
_SECTION_TOTALS = ("subtotal", "adjustments_total", "total", "unrated_lines")


def _account_path(name: str) -> str:
    try:
        return accounts.account_id(name)
    except accounts.AccountError as exc:
        raise ApiError(400, "bad_request", str(exc)) from None


def _known(name: str) -> Any:
    try:
        return accounts.get(db_session(), _account_path(name))
    except accounts.UnknownAccount as exc:
        raise ApiError(404, "not_found", str(exc)) from None


@bp.post("/v1/accounts")
@require_role("admin")
def post_account() -> Any:
    document = json_object()
    session = db_session()
    with session.begin():
        writes.of(session).begin_write(session)
        try:
            row = accounts.add(session, document, caller_name(), utcnow())
        except accounts.AccountError as exc:
            raise ApiError(400, "invalid_account", str(exc)) from None
        except accounts.AccountConflict as exc:
            raise ApiError(409, "conflict", str(exc)) from None
        rendered = accounts.render(row)
    return jsonify(rendered), 201


@bp.get("/v1/accounts")
@require_role("read")
def get_accounts() -> Any:
    params.only(request.args, frozenset({"limit", "marker"}))
    limit = pagination.parse_limit(request.args)
    after = None
    if "marker" in request.args:
        (decoded,) = pagination.decode_marker(_TAG, ["str"], request.args["marker"])
        after = str(decoded)
    rows = accounts.listed(db_session(), after, limit + 1)
    marker = (pagination.encode_marker(_TAG, [rows[limit - 1].account_id])
              if len(rows) > limit else None)
    return pagination.list_body([accounts.render(r) for r in rows[:limit]], marker)


@bp.get("/v1/accounts/<account_id>")
@require_role("read")
def get_account(account_id: str) -> Any:
    params.only(request.args, frozenset())
    row = _known(account_id)
    members = accounts.memberships_of(db_session(), row.account_id)
    return {**accounts.render(row),
            "memberships": [accounts.render_membership(m) for m in members]}


@bp.post("/v1/accounts/<account_id>/memberships")
@require_role("admin")
def post_membership(account_id: str) -> Any:
    account = _account_path(account_id)
    document = json_object()
    session = db_session()
    with session.begin():
        seam = writes.of(session)
        seam.begin_write(session)
        # A close and a membership exclude each other, as a close and a price version do.
        seam.xact_lock(session, locks.PRICES_KEY)
        try:
            row = accounts.add_membership(session, account, document, caller_name(), utcnow())
        except accounts.UnknownAccount as exc:
            raise ApiError(404, "not_found", str(exc)) from None
        except accounts.AccountError as exc:
            raise ApiError(400, "invalid_membership", str(exc)) from None
        except accounts.AccountConflict as exc:
            raise ApiError(409, "conflict", str(exc)) from None
        rendered = accounts.render_membership(row)
    return jsonify(rendered), 201


def account_csv(document: dict[str, Any]) -> str:
    """An account statement as CSV, every member in the JSON's order: a row per
    top-level member, then per section a ``project`` row (``value``: its status), its
    ``line`` and ``adjustment`` rows and its totals, then one row per currency total
    (``account_subtotal`` …, ``currency`` filled)."""
    blank = dict.fromkeys(ACCOUNT_CSV_FIELDS)
    rows: list[tuple[dict[str, Any], bool]] = []
    for name, value in document.items():
        if name == "projects":
            for item in value:
                where = {field: item[field] for field in SECTION_FIELDS}
                rows.append(({**blank, **where, "record": "project", "value": item["status"]},
                             False))
                rows.extend(({**blank, **where, "record": "line", **line}, False)
                            for line in item["lines"])
                rows.extend(({**blank, **where, "record": "adjustment", **adjustment}, False)
                            for adjustment in item["adjustments"])
                rows.extend(({**blank, **where, "record": total, "value": item[total]}, True)
                            for total in _SECTION_TOTALS)
        elif name == "totals":
            for item in value:
                rows.extend(({**blank, "record": f"account_{total}", "currency": item["currency"],
                              "value": item[total]}, True) for total in _SECTION_TOTALS)
        else:
            rows.append(({**blank, "record": name, "value": value}, False))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(ACCOUNT_CSV_FIELDS)
    for row, value_is_number in rows:
        numbers = NUMERIC_FIELDS | ({"value", "membership"} if value_is_number else
                                    {"membership"})
        writer.writerow([neutralised(_cell(row[field]), field in numbers)
                         for field in ACCOUNT_CSV_FIELDS])
    return out.getvalue()


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def _wants_csv() -> bool:
    accept = request.accept_mimetypes
    return accept.best_match(["application/json", "text/csv"]) == "text/csv" and (
        accept["text/csv"] > accept["application/json"])


@bp.get("/v1/accounts/<account_id>/statement")
@require_role("read")
def get_account_statement(account_id: str) -> Response:
    params.only(request.args, frozenset({"period"}))
    period = period_name(request.args.get("period"))
    account = _known(account_id)
    now = utcnow()
    if periods.parse(period)[0] > now:
        raise ApiError(409, "period_not_started",
                       f"period {period} has not started yet (it starts at {period}-01); "
                       "no statement exists before its month")
    document = account_statements.document(db_session(), account.account_id, period, now)
    if _wants_csv():
        return Response(account_csv(document), mimetype="text/csv")
    return Response(json.dumps(document, separators=(",", ":"), ensure_ascii=False),
                    mimetype="application/json")
