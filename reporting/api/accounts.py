"""``/v1/accounts``: billing accounts, their dated memberships and their statements.

Adding an account or a membership is ``admin``; reading them and an account's
statement is ``read``, or ``account_reader`` for its own account (a project reader
reads its project's statement only).
``GET /v1/accounts/{id}/statement?period=P`` answers JSON, or CSV with
``Accept: text/csv``.  ``POST /v1/accounts/{id}/lines`` (admin) books a credit, a
charge or a reversal by hand; ``GET`` lists them (read).
``POST /v1/accounts/{id}/commitments`` (admin) adds a dated minimum commitment,
``POST /v1/accounts/{id}/discounts`` (admin) a dated percentage discount; ``GET``
lists them (read).  Semantics in ``docs/statements.md``, "Billing accounts",
"Credits and charges", "Minimum commitments" and "Discounts".
"""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
import json
from collections.abc import Callable
from typing import Any

from flask import Blueprint, Response, jsonify, request
from sqlalchemy.orm import Session

from reporting import pagination
from reporting.api.auth import require_role
from reporting.api.billing_common import (
    caller_name,
    cloud_path,
    period_name,
    require_started,
)
from reporting.api.errors import ApiError
from reporting.api.jsonbody import json_object
from reporting.api.periods import require_known
from reporting.api.project_scope import require_account_read, visible_account
from reporting.api.statements import (
    LINE_FIELDS,
    NUMERIC_FIELDS,
    neutralised,
    tier_row,
    wants_csv,
)
from reporting.billing import (
    account_statements,
    account_terms,
    accounts,
    commitments,
    discounts,
    locks,
    manual_lines,
)
from reporting.clock import utcnow
from reporting.db import writes
from reporting.db.session import db_session
from reporting.queries import params

bp = Blueprint("accounts", __name__)
_TAG = "accounts"
_LINES_TAG = "account-lines"
_COMMITMENTS_TAG = "account-commitments"
_DISCOUNTS_TAG = "account-discounts"
SECTION_FIELDS = ("cloud", "project_id", "membership", "from", "to", "currency")
# The fields of a credit or charge booked by hand not already among the above.
MANUAL_FIELDS = ("line", "kind", "reason", "effective_at", "reverses", "created_at",
                 "created_by")
# An account statement's CSV: what the row is, a member's value, the section it
# belongs to, then the lines', the adjustments' and the credits' and charges' fields.
ACCOUNT_CSV_FIELDS = ("record", "value", *SECTION_FIELDS, *LINE_FIELDS, "period",
                      "event_ids", *MANUAL_FIELDS)
_SECTION_TOTALS = ("subtotal", "adjustments_total", "total", "unrated_lines")
_ACCOUNT_TOTALS = ("subtotal", "adjustments_total", "manual_total", "total", "unrated_lines")
# The rows of a commitment applied to a currency's total, after its adjustments_total.
_COMMITMENT_ROWS = (("effective_from", False), ("minimum", True), ("shortfall", True))
# The rows of a discount applied to a currency's total, before its commitment's.
_DISCOUNT_ROWS = (("effective_from", False), ("percent", True), ("amount", True))


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
@require_account_read
def get_accounts() -> Any:
    params.only(request.args, frozenset({"limit", "marker"}))
    limit = pagination.parse_limit(request.args)
    after = pagination.after_id(_TAG, request.args)
    own = visible_account()
    if own is None:
        rows = accounts.listed(db_session(), after, limit + 1)
    else:  # an account reader lists its own account only
        rows = [] if after is not None and after >= own else [accounts.get(db_session(), own)]
    marker = (pagination.encode_marker(_TAG, [rows[limit - 1].account_id])
              if len(rows) > limit else None)
    return pagination.list_body([accounts.render(r) for r in rows[:limit]], marker)


@bp.get("/v1/accounts/<account_id>")
@require_account_read
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
    top-level member (a ``not_billable`` row per cloud whose period is not billable:
    ``cloud``, and the reason in ``value``), then per section a ``project`` row (``value``: its status), its
    ``line``, ``tier`` and ``adjustment`` rows and its totals, then a ``manual_line`` row per
    credit or charge booked by hand, then one row per currency total
    (``account_subtotal`` …, ``currency`` filled; ``account_discount_…`` and
    ``account_commitment_…`` where a discount or a commitment applies)."""
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
                rows.extend(({**blank, **where, **tier_row(tier)}, False)
                            for tier in item.get("tiers", []))
                rows.extend(({**blank, **where, "record": "adjustment", **adjustment}, False)
                            for adjustment in item["adjustments"])
                rows.extend(({**blank, **where, "record": total, "value": item[total]}, True)
                            for total in _SECTION_TOTALS)
        elif name == "not_billable":
            rows.extend(({**blank, "record": name, "cloud": item["cloud"],
                          "value": item["reason"]}, False) for item in value)
        elif name == "manual_lines":
            rows.extend(({**blank, "record": "manual_line", **line}, False) for line in value)
        elif name == "totals":
            for item in value:
                rows.extend(_total_rows(blank, item))
        else:
            rows.append(({**blank, "record": name, "value": value}, False))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(ACCOUNT_CSV_FIELDS)
    for row, value_is_number in rows:
        fixed = {"membership", "line", "reverses"}
        numbers = NUMERIC_FIELDS | ({"value", *fixed} if value_is_number else fixed)
        writer.writerow([neutralised(_cell(row[field]), field in numbers)
                         for field in ACCOUNT_CSV_FIELDS])
    return out.getvalue()


def _total_rows(blank: dict[str, Any], item: dict[str, Any]
                ) -> list[tuple[dict[str, Any], bool]]:
    """A currency's ``account_…`` rows; after ``account_adjustments_total``, a
    discount applied to it adds ``account_discount_effective_from``, ``_percent`` and
    ``_amount``, then a commitment applied to it ``account_commitment_effective_from``,
    ``_minimum`` and ``_shortfall`` (none without them: as before either existed)."""
    where = {**blank, "currency": item["currency"]}
    rows = [({**where, "record": f"account_{total}", "value": item[total]}, True)
            for total in _ACCOUNT_TOTALS]
    terms: list[tuple[dict[str, Any], bool]] = []
    for name, members in (("discount", _DISCOUNT_ROWS), ("commitment", _COMMITMENT_ROWS)):
        applied = item.get(name)
        if applied is not None:
            terms.extend(({**where, "record": f"account_{name}_{member}",
                           "value": applied[member]}, is_number)
                         for member, is_number in members)
    rows[2:2] = terms
    return rows


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


@bp.get("/v1/accounts/<account_id>/statement")
@require_account_read
def get_account_statement(account_id: str) -> Response:
    params.only(request.args, frozenset({"period"}))
    period = period_name(request.args.get("period"))
    account = _known(account_id)
    now = utcnow()
    require_started(period, now)
    document = account_statements.document(db_session(), account.account_id, period, now)
    if wants_csv():
        return Response(account_csv(document), mimetype="text/csv")
    return Response(json.dumps(document, separators=(",", ":"), ensure_ascii=False),
                    mimetype="application/json")


@bp.post("/v1/accounts/<account_id>/lines")
@require_role("admin")
def post_line(account_id: str) -> Any:
    account = _account_path(account_id)
    document = json_object()
    if isinstance(document.get("cloud"), str) and "reverses" not in document:
        require_known(cloud_path(document["cloud"]))
    session = db_session()
    with session.begin():
        try:
            row = manual_lines.book_excluding_closes(session, account, document,
                                                     caller_name(), utcnow())
        except accounts.UnknownAccount as exc:
            raise ApiError(404, "not_found", str(exc)) from None
        except manual_lines.LineError as exc:
            raise ApiError(400, "invalid_line", str(exc)) from None
        except manual_lines.LineRefused as exc:
            raise ApiError(409, exc.code, str(exc)) from None
        rendered = manual_lines.render_listed(row, None)
    return jsonify(rendered), 201


@bp.get("/v1/accounts/<account_id>/lines")
@require_account_read
def get_lines(account_id: str) -> Any:
    params.only(request.args, frozenset({"cloud", "period", "limit", "marker"}))
    cloud = params.text(request.args, "cloud")
    period = period_name(request.args["period"]) if "period" in request.args else None
    limit = pagination.parse_limit(request.args)
    after = None
    if "marker" in request.args:
        (decoded,) = pagination.decode_marker(_LINES_TAG, ["int"], request.args["marker"])
        after = int(decoded)  # type: ignore[arg-type]
    account = _known(account_id)
    rows = manual_lines.listed(db_session(), account.account_id, cloud=cloud, period=period,
                               after=after, limit=limit + 1)
    marker = (pagination.encode_marker(_LINES_TAG, [rows[limit - 1][0].number])
              if len(rows) > limit else None)
    return pagination.list_body([manual_lines.render_listed(row, by)
                                 for row, by in rows[:limit]], marker)


@dataclasses.dataclass(frozen=True)
class _DatedTerm:
    """A kind of an account's dated terms (a commitment, a discount): how the routes
    below add one, render one and page through them."""

    add_excluding_closes: Callable[..., Any]
    render: Callable[[Any], dict[str, Any]]
    listed: Callable[[Session, str, dt.datetime | None, int], list[Any]]
    invalid: type[Exception]  # a document that says nothing valid: 400 ``invalid_code``
    invalid_code: str
    refused: type[account_terms.TermRefused]  # valid, not here (a closed period): 409
    marker_tag: str


_COMMITMENTS = _DatedTerm(commitments.add_excluding_closes, commitments.render,
                          commitments.listed, commitments.CommitmentError,
                          "invalid_commitment", commitments.CommitmentRefused,
                          _COMMITMENTS_TAG)
_DISCOUNTS = _DatedTerm(discounts.add_excluding_closes, discounts.render, discounts.listed,
                        discounts.DiscountError, "invalid_discount",
                        discounts.DiscountRefused, _DISCOUNTS_TAG)


def _post_term(account_id: str, term: _DatedTerm) -> Any:
    account = _account_path(account_id)
    document = json_object()
    session = db_session()
    with session.begin():
        try:
            row = term.add_excluding_closes(session, account, document, caller_name(),
                                            utcnow())
        except accounts.UnknownAccount as exc:
            raise ApiError(404, "not_found", str(exc)) from None
        except term.invalid as exc:
            raise ApiError(400, term.invalid_code, str(exc)) from None
        except term.refused as exc:
            raise ApiError(409, exc.code, str(exc)) from None
        rendered = term.render(row)
    return jsonify(rendered), 201


def _list_terms(account_id: str, term: _DatedTerm) -> Any:
    params.only(request.args, frozenset({"limit", "marker"}))
    limit = pagination.parse_limit(request.args)
    after = None
    if "marker" in request.args:
        (decoded,) = pagination.decode_marker(term.marker_tag, ["datetime"],
                                              request.args["marker"])
        assert isinstance(decoded, dt.datetime)  # the shape asks for one
        after = decoded
    account = _known(account_id)
    rows = term.listed(db_session(), account.account_id, after, limit + 1)
    marker = (pagination.encode_marker(term.marker_tag, [rows[limit - 1].effective_from])
              if len(rows) > limit else None)
    return pagination.list_body([term.render(row) for row in rows[:limit]], marker)


@bp.post("/v1/accounts/<account_id>/commitments")
@require_role("admin")
def post_commitment(account_id: str) -> Any:
    return _post_term(account_id, _COMMITMENTS)


@bp.get("/v1/accounts/<account_id>/commitments")
@require_account_read
def get_commitments(account_id: str) -> Any:
    return _list_terms(account_id, _COMMITMENTS)


@bp.post("/v1/accounts/<account_id>/discounts")
@require_role("admin")
def post_discount(account_id: str) -> Any:
    return _post_term(account_id, _DISCOUNTS)


@bp.get("/v1/accounts/<account_id>/discounts")
@require_account_read
def get_discounts(account_id: str) -> Any:
    return _list_terms(account_id, _DISCOUNTS)
