"""``GET /v1/account-summaries?period=P``: every account's summary of a period, by
account id (a list, ``limit``/``marker``), each its account statement's totals and
sections without their lines (``reporting.billing.account_summaries``).

Roles as the account routes: ``read`` and ``admin`` get every account, an
``account_reader`` its own.  ``Accept: text/csv`` answers CSV, the next page's marker
in ``X-Next-Marker``.  A path of its own: any word after ``/v1/accounts/`` is an
account id.  Semantics in ``docs/statements.md``, "Billing accounts".
"""

from __future__ import annotations

import json
from typing import Any

from flask import Blueprint, Response, request

from reporting import pagination
from reporting.api.billing_common import period_name, require_started
from reporting.api.project_scope import require_account_read, visible_account
from reporting.api.read_limits import expensive_read
from reporting.api.statements import csv_text, wants_csv
from reporting.billing import account_summaries
from reporting.clock import utcnow
from reporting.db.session import db_session
from reporting.queries import params

bp = Blueprint("account_summaries", __name__)
_TAG = "account-summaries"
_PARAMS = frozenset({"period", "limit", "marker"})
# A currency total's applied discount and commitment, one column per member.
_TERM_FIELDS = ("discount_effective_from", "discount_percent", "discount_amount",
                "commitment_effective_from", "commitment_minimum", "commitment_shortfall")
# The CSV: per account a ``not_billable`` row per cloud (the reason in ``value``), a
# ``section`` row per section, a ``total`` row per currency (``status``: the
# statement's).
CSV_FIELDS = ("account_id", "period", "record", "value", "cloud", "project_id",
              "membership", "from", "to", "status", "currency", "subtotal",
              "adjustments_total", *_TERM_FIELDS, "manual_total", "total", "unrated_lines",
              "number")
# Numbers Tally wrote beyond the statements' (a discount's amount is negative).
_NUMERIC = frozenset({"membership", "manual_total", "discount_percent", "discount_amount",
                      "commitment_minimum", "commitment_shortfall"})


def _rows(item: dict[str, Any]) -> list[dict[str, Any]]:
    blank = {**dict.fromkeys(CSV_FIELDS), "account_id": item["account_id"],
             "period": item["period"]}
    rows = [{**blank, "record": "not_billable", "cloud": x["cloud"], "value": x["reason"]}
            for x in item.get("not_billable", [])]
    rows.extend({**blank, "record": "section", **section} for section in item["sections"])
    for total in item["totals"]:
        terms = {f"{name}_{member}": value
                 for name in ("discount", "commitment")
                 for member, value in (total.get(name) or {}).items()}
        rows.append({**blank, "record": "total", "status": item["status"],
                     **{name: value for name, value in total.items()
                        if name not in ("discount", "commitment")}, **terms})
    return rows


def summaries_csv(items: list[dict[str, Any]]) -> str:
    """A page of summaries as CSV: the rows of every account, in the JSON's order."""
    return csv_text([row for item in items for row in _rows(item)], CSV_FIELDS, _NUMERIC)


@bp.get("/v1/account-summaries")
@require_account_read
@expensive_read
def get_account_summaries() -> Response:
    args = request.args
    params.only(args, _PARAMS)
    period = period_name(args.get("period"))
    limit = pagination.parse_limit(args)
    after = pagination.after_id(_TAG, args)
    now = utcnow()
    require_started(period, now)
    items, more = account_summaries.page(db_session(), period, now, after, limit,
                                         visible_account())
    marker = pagination.encode_marker(_TAG, [items[-1]["account_id"]]) if more else None
    if wants_csv():
        response = Response(summaries_csv(items), mimetype="text/csv")
        if marker is not None:
            response.headers["X-Next-Marker"] = marker
        return response
    body = pagination.list_body(items, marker)
    return Response(json.dumps(body, separators=(",", ":"), ensure_ascii=False),
                    mimetype="application/json")
