"""The billing subcommands: ``price-list put|show``, ``statement``,
``period close|list|deliveries|redeliver|export``,
``account add|list|show|join|statement|summaries``,
the credits and charges booked by hand: ``account credit|charge|reverse|lines``, the
minimum commitments: ``account commit|commitments``, and the percentage discounts:
``account discount|discounts``.

``price-list put`` reads YAML or JSON and keeps every number as the text it was
written as (``0.020`` stays ``"0.020"``, never a binary float), so amounts reach the
API exactly as the operator typed them.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from urllib.parse import quote

import yaml

from tallyclient.cli import table
from tallyclient.cli.commands import Output
from tallyclient.cli.http import ApiClient
from tallyclient.documents import (
    DuplicateKeyError,
    DuplicateYamlKey,
    UniqueKeyLoader,
    loads_json,
    where_and_why,
)


class DocumentError(Exception):
    """A price list file that cannot be read (a usage error, exit 2)."""


class _TextScalars(UniqueKeyLoader):
    """YAML where numbers and timestamps stay the text they were written as (and a
    key written twice is refused)."""


def _as_text(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(loader.construct_scalar(node))  # type: ignore[arg-type]


for _tag in ("int", "float", "timestamp"):
    _TextScalars.add_constructor(f"tag:yaml.org,2002:{_tag}", _as_text)


def read_document(path: str) -> Any:
    """A price list document from a JSON or YAML file, numbers kept as text; a key
    written twice in one object is refused with its line (else the last would win)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DocumentError(f"cannot read {path}: {exc}") from None
    try:
        if path.endswith(".json"):
            return loads_json(text, parse_float=str, parse_int=str)
        return yaml.load(text, Loader=_TextScalars)  # noqa: S506 - a SafeLoader subclass
    except DuplicateKeyError as exc:
        raise DocumentError(f"{path}: {exc}; each member is written once") from None
    except DuplicateYamlKey as exc:
        raise DocumentError(f"{path}{where_and_why(exc)}; each key is written once") from None
    except (ValueError, yaml.YAMLError) as exc:
        raise DocumentError(f"{path} is not valid JSON or YAML: {exc}") from None


def _quoted(value: str) -> str:
    return quote(value, safe="")


VERSION_COLUMNS = [table.field(name) for name in (
    "version", "effective_from", "currency", "created_at", "created_by")]


def price_list_put(client: ApiClient, args: argparse.Namespace) -> Output:
    body = client.put(f"/v1/price-lists/{_quoted(args.cloud)}", read_document(args.file))
    return Output(body, VERSION_COLUMNS, [body])


def price_list_show(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages(f"/v1/price-lists/{_quoted(args.cloud)}", {}, None)
    return Output(items, VERSION_COLUMNS, items)


LINE_COLUMNS = [table.field(name) for name in (
    "resource_type", "resource_id", "state", "start", "end", "price_list_version", "quantity",
    "unit", "rate", "modifier", "amount")] + [
    # An adjustment's or a credit's row says what it is in ``note``.
    ("note", lambda row: row.get("note") or row["unrated"] or (
        "zero-rated" if row["zero_rated"] else None))]
SUMMARY_COLUMNS = [table.field(name) for name in (
    "project_id", "subtotal", "adjustments_total", "total", "unrated_lines", "number")]


def _tier_row(tier: dict[str, Any]) -> dict[str, Any]:
    """A tier line as a table row: its quantity, the lines' rate, what it changes, and
    in ``note`` the tiers that priced the quantity."""
    reached = ", ".join(f"{t['quantity']} at {t['rate']}" for t in tier["tiers"])
    return {"resource_type": tier["resource_type"], "resource_id": None, "state": None,
            "start": None, "end": None, "price_list_version": tier["price_list_version"],
            "quantity": tier["quantity"], "unit": tier["unit"], "rate": tier["rate"],
            "modifier": None, "amount": tier["amount"], "unrated": None, "zero_rated": False,
            "note": f"{tier['mode']} tiers{_of_volume_type(tier)}: {reached}"}


def _of_volume_type(tier: dict[str, Any]) -> str:
    """Which volume type a volume type's tier line prices (others name none)."""
    return f" of volume type {tier['volume_type']}" if tier.get("volume_type") else ""


def statement(client: ApiClient, args: argparse.Namespace) -> Output:
    params = {"cloud": args.cloud, "period": args.period, "project_id": args.project}
    if args.format == "csv":
        if args.project is not None:
            text = client.get_text("/v1/statements", params, "text/csv")
        else:
            text = _csv_pages(client, "/v1/statements", params)
        return Output(None, [], [], text=text)
    if args.project is None:
        items = client.pages("/v1/statements", params, None)
        return Output(items, SUMMARY_COLUMNS, items)
    body = client.get("/v1/statements", params)
    rows = body["lines"] + [_tier_row(tier) for tier in body.get("tiers", [])] + [
        {"resource_type": a["resource_type"], "resource_id": a["resource_id"], "state": None,
         "start": None, "end": None, "price_list_version": None, "quantity": None,
         "unit": None, "rate": None, "modifier": None, "amount": a["amount"], "unrated": None,
         "zero_rated": False, "note": f"adjustment of {a['period']}"}
        for a in body["adjustments"]
    ]
    footer = (f"{body['status']}{' (provisional)' if body['provisional'] else ''}  "
              f"{body['currency'] or ''} subtotal {body['subtotal']}  adjustments "
              f"{body['adjustments_total']}  total {body['total']}  "
              f"unrated lines {body['unrated_lines']}")
    return Output(body, LINE_COLUMNS, rows, footer)


def _csv_pages(client: ApiClient, path: str, params: dict[str, str | None]) -> str:
    """Every page of a list answered in CSV as one CSV (the header once)."""
    parts: list[str] = []
    marker: str | None = None
    while True:
        text, marker = client.get_text_page(path, {**params, "marker": marker}, "text/csv")
        parts.append(text if not parts else text.split("\r\n", 1)[1])
        if not marker:
            return "".join(parts)


PERIOD_COLUMNS = [table.field(name) for name in (
    "period", "status", "ended", "closed_at", "closed_by", "cutoff_seq", "cutoff_received_at")] + [
    ("accepted", lambda row: "; ".join(
        ([f"{row['accepted_unrated_lines']} unrated lines"]
         if row.get("accepted_unrated_lines") else [])
        + ([f"history from {row['accepted_partial_history_from']}"]
           if row.get("accepted_partial_history_from") else [])) or None)]


def period_close(client: ApiClient, args: argparse.Namespace) -> Output:
    accept = {name: True for name, given in (
        ("accept_unrated_lines", args.accept_unrated),
        ("accept_partial_history", args.accept_partial_history)) if given}
    body = client.post(f"/v1/periods/{_quoted(args.cloud)}/{_quoted(args.period)}/close",
                       accept or None)
    return Output(body, PERIOD_COLUMNS, [body])


def period_list(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages(f"/v1/periods/{_quoted(args.cloud)}", {}, None)
    return Output(items, PERIOD_COLUMNS, items)


DELIVERY_COLUMNS = [table.field(name) for name in (
    "id", "event", "status", "created_at", "next_attempt_at", "delivered_at")] + [
    ("attempts", lambda row: len(row["attempts"])),
    ("last_attempt", lambda row: None if not row["attempts"] else (
        f"{row['attempts'][-1]['attempted_at']} "
        f"{row['attempts'][-1]['error'] or row['attempts'][-1]['status_code']}"))]
EXPORT_COLUMNS = [table.field(name) for name in (
    "number", "project_id", "currency", "subtotal", "adjustments_total", "total",
    "unrated_lines")]


def period_deliveries(client: ApiClient, args: argparse.Namespace) -> Output:
    body = client.get(f"/v1/periods/{_quoted(args.cloud)}/{_quoted(args.period)}/deliveries")
    return Output(body, DELIVERY_COLUMNS, body["items"])


def period_redeliver(client: ApiClient, args: argparse.Namespace) -> Output:
    body = client.post(f"/v1/periods/{_quoted(args.cloud)}/{_quoted(args.period)}"
                       f"/deliveries/{_quoted(args.delivery)}/redeliver", None)
    return Output(body, DELIVERY_COLUMNS, [body])


def period_export(client: ApiClient, args: argparse.Namespace) -> Output:
    """JSON and CSV: the export's bytes as the API answers them (to a file, for the
    invoicing system); a table: one row per closed statement."""
    path = f"/v1/periods/{_quoted(args.cloud)}/{_quoted(args.period)}/export"
    if args.format in ("csv", "json"):
        accept = "text/csv" if args.format == "csv" else "application/json"
        return Output(None, [], [], text=client.get_text(path, {"format": args.format},
                                                         accept))
    body = client.get(path, {"format": "json"})
    rows = [{"number": item["number"], **item["statement"]} for item in body["statements"]]
    return Output(body, EXPORT_COLUMNS, rows,
                  f"{body['cloud']} {body['period']} closed at {body['closed_at']}: "
                  f"{len(rows)} statement(s)")


ACCOUNT_COLUMNS = [table.field(name) for name in (
    "account_id", "description", "created_at", "created_by")]
MEMBERSHIP_COLUMNS = [table.field(name) for name in (
    "account_id", "cloud", "project_id", "number", "effective_from", "created_at",
    "created_by")]
SECTION_LINE_COLUMNS = [table.field(name) for name in ("cloud", "project_id")] + LINE_COLUMNS


def account_add(client: ApiClient, args: argparse.Namespace) -> Output:
    body = client.post("/v1/accounts",
                       {"account_id": args.account, "description": args.description})
    return Output(body, ACCOUNT_COLUMNS, [body])


def account_list(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages("/v1/accounts", {}, None)
    return Output(items, ACCOUNT_COLUMNS, items)


def account_show(client: ApiClient, args: argparse.Namespace) -> Output:
    body = client.get(f"/v1/accounts/{_quoted(args.account)}")
    return Output(body, MEMBERSHIP_COLUMNS, body["memberships"],
                  f"{body['account_id']}: {body['description']}")


def account_join(client: ApiClient, args: argparse.Namespace) -> Output:
    body = client.post(f"/v1/accounts/{_quoted(args.account)}/memberships",
                       {"cloud": args.cloud, "project_id": args.project,
                        "effective_from": args.effective_from})
    return Output(body, MEMBERSHIP_COLUMNS, [body])


def account_statement(client: ApiClient, args: argparse.Namespace) -> Output:
    path = f"/v1/accounts/{_quoted(args.account)}/statement"
    if args.format == "csv":
        return Output(None, [], [], text=client.get_text(path, {"period": args.period},
                                                         "text/csv"))
    body = client.get(path, {"period": args.period})
    rows: list[dict[str, Any]] = []
    for section in body["projects"]:
        where = {"cloud": section["cloud"], "project_id": section["project_id"]}
        rows.extend({**where, **line} for line in section["lines"])
        rows.extend({**where, "resource_type": a["resource_type"],
                     "resource_id": a["resource_id"], "state": None, "start": None,
                     "end": None, "price_list_version": None, "quantity": None, "unit": None,
                     "rate": None, "modifier": None, "amount": a["amount"], "unrated": None,
                     "zero_rated": False, "note": f"adjustment of {a['period']}"}
                    for a in section["adjustments"])
    rows.extend({"cloud": line["cloud"], "project_id": line["project_id"],
                 "resource_type": None, "resource_id": None, "state": None,
                 "start": line["effective_at"], "end": None, "price_list_version": None,
                 "quantity": None, "unit": None, "rate": None, "modifier": None,
                 "amount": line["amount"], "unrated": None, "zero_rated": False,
                 "note": _manual_note(line)}
                for line in body["manual_lines"])
    totals = "; ".join(
        f"{t['currency'] or ''} subtotal {t['subtotal']}  adjustments {t['adjustments_total']}"
        f"{_discounted(t.get('discount'))}{_committed(t.get('commitment'))}"
        f"  credits and charges {t['manual_total']}  total {t['total']}"
        f"  unrated lines {t['unrated_lines']}" for t in body["totals"])
    footer = (f"{body['status']}{' (provisional)' if body['provisional'] else ''}  "
              f"{totals or 'no project in the period'}")
    # a cloud whose period is not billable has no section: say why under the totals
    footer += "".join(f"\nno section of cloud {item['cloud']}: {item['reason']}"
                      for item in body.get("not_billable", []))
    return Output(body, SECTION_LINE_COLUMNS, rows, footer)


# Each page of account summaries computes a statement per account: pages of the API's
# default size keep each request short.
SUMMARY_PAGE = 100
ACCOUNT_SUMMARY_COLUMNS = [table.field(name) for name in (
    "account_id", "status", "currency", "subtotal", "adjustments_total")] + [
    ("discount", lambda row: (row.get("discount") or {}).get("amount")),
    ("shortfall", lambda row: (row.get("commitment") or {}).get("shortfall"))] + [
    table.field(name) for name in ("manual_total", "total", "unrated_lines", "projects")]


def account_summaries(client: ApiClient, args: argparse.Namespace) -> Output:
    """Every account's summary of a period (every page): a row per account and
    currency total, with the projects of its sections in that currency; an account
    with no total, a row of its own."""
    path, params = "/v1/account-summaries", {"period": args.period}
    if args.format == "csv":
        return Output(None, [], [], text=_csv_pages(
            client, path, {**params, "limit": str(SUMMARY_PAGE)}))
    items = client.pages(path, params, None, page_size=SUMMARY_PAGE)
    rows: list[dict[str, Any]] = []
    for item in items:
        where = {"account_id": item["account_id"], "status": item["status"]}
        rows.extend({**where, **total, "projects": " ".join(
            f"{s['cloud']}/{s['project_id']}" for s in item["sections"]
            if s["currency"] == total["currency"]) or None} for total in item["totals"])
        if not item["totals"]:
            rows.append(where)
    footer = "".join(f"\n{item['account_id']}: no section of cloud {x['cloud']}: {x['reason']}"
                     for item in items for x in item.get("not_billable", []))
    return Output(items, ACCOUNT_SUMMARY_COLUMNS, rows, footer.lstrip("\n") or None)


def _discounted(applied: dict[str, Any] | None) -> str:
    """The discount applied to a currency's total, as the footer says it."""
    if applied is None:
        return ""
    return (f"  discount {applied['percent']} % (from {applied['effective_from']})"
            f" {applied['amount']}")


def _committed(applied: dict[str, Any] | None) -> str:
    """The commitment applied to a currency's total, as the footer says it."""
    if applied is None:
        return ""
    return (f"  minimum {applied['minimum']} (from {applied['effective_from']})"
            f"  shortfall {applied['shortfall']}")


def _manual_note(line: dict[str, Any]) -> str:
    undoes = f" reversing line {line['reverses']}" if line["reverses"] is not None else ""
    return f"{line['kind']} line {line['line']}{undoes}: {line['reason']}"


MANUAL_COLUMNS = [table.field(name) for name in (
    "line", "cloud", "period", "project_id", "kind", "amount", "currency", "effective_at",
    "reverses", "reversed_by", "created_at", "created_by", "reason")]


def account_book(client: ApiClient, args: argparse.Namespace) -> Output:
    """``account credit`` and ``account charge``: the amount is sent as typed."""
    document = {"kind": args.kind, "cloud": args.cloud, "period": args.period,
                "amount": args.amount, "reason": args.reason, "effective_at": args.at}
    if args.project is not None:
        document["project_id"] = args.project
    body = client.post(f"/v1/accounts/{_quoted(args.account)}/lines", document)
    return Output(body, MANUAL_COLUMNS, [body])


def account_reverse(client: ApiClient, args: argparse.Namespace) -> Output:
    document: dict[str, Any] = {"reverses": args.line, "reason": args.reason}
    if args.period is not None:
        document["period"] = args.period
    if args.at is not None:
        document["effective_at"] = args.at
    body = client.post(f"/v1/accounts/{_quoted(args.account)}/lines", document)
    return Output(body, MANUAL_COLUMNS, [body])


def account_lines(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages(f"/v1/accounts/{_quoted(args.account)}/lines",
                         {"cloud": args.cloud, "period": args.period}, None)
    return Output(items, MANUAL_COLUMNS, items)


COMMITMENT_COLUMNS = [table.field(name) for name in (
    "account_id", "effective_from", "currency", "minimum", "created_at", "created_by")]


def account_commit(client: ApiClient, args: argparse.Namespace) -> Output:
    """``account commit``: the minimum is sent as typed (a decimal string)."""
    body = client.post(f"/v1/accounts/{_quoted(args.account)}/commitments",
                       {"effective_from": args.effective_from, "currency": args.currency,
                        "minimum": args.minimum})
    return Output(body, COMMITMENT_COLUMNS, [body])


def account_commitments(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages(f"/v1/accounts/{_quoted(args.account)}/commitments", {}, None)
    return Output(items, COMMITMENT_COLUMNS, items)


def _register_commitments(verbs: Any, common: argparse.ArgumentParser) -> None:
    commit = verbs.add_parser("commit", parents=[common], allow_abbrev=False,
                              help="a minimum each period of the account bills, from a "
                              "month's start on, until the next commitment (admin); a "
                              "minimum of 0 ends it")
    commit.add_argument("account")
    commit.add_argument("--from", dest="effective_from", required=True, metavar="RFC3339",
                        help="the month's start it applies from, e.g. 2026-11-01T00:00:00Z")
    commit.add_argument("--currency", required=True, help="an ISO 4217 code, e.g. EUR")
    commit.add_argument("--minimum", required=True,
                        help="a non-negative decimal in the currency, e.g. 100.00")
    commit.set_defaults(handler=account_commit)
    listing = verbs.add_parser("commitments", parents=[common], allow_abbrev=False,
                               help="the account's minimum commitments, by instant")
    listing.add_argument("account")
    listing.set_defaults(handler=account_commitments)


DISCOUNT_COLUMNS = [table.field(name) for name in (
    "account_id", "effective_from", "percent", "created_at", "created_by", "reason")]


def account_discount(client: ApiClient, args: argparse.Namespace) -> Output:
    """``account discount``: the percent is sent as typed (a decimal string)."""
    body = client.post(f"/v1/accounts/{_quoted(args.account)}/discounts",
                       {"effective_from": args.effective_from, "percent": args.percent,
                        "reason": args.reason})
    return Output(body, DISCOUNT_COLUMNS, [body])


def account_discounts(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages(f"/v1/accounts/{_quoted(args.account)}/discounts", {}, None)
    return Output(items, DISCOUNT_COLUMNS, items)


def _register_discounts(verbs: Any, common: argparse.ArgumentParser) -> None:
    discount = verbs.add_parser("discount", parents=[common], allow_abbrev=False,
                                help="a percent off each period's usage of the account, "
                                "from a month's start on, until the next discount (admin); "
                                "a percent of 0 ends it")
    discount.add_argument("account")
    discount.add_argument("--from", dest="effective_from", required=True, metavar="RFC3339",
                          help="the month's start it applies from, e.g. 2026-11-01T00:00:00Z")
    discount.add_argument("--percent", required=True,
                          help="a decimal from 0 to 100 with at most 2 decimals, e.g. 12.5")
    discount.add_argument("--reason", required=True, help="why (1 to 1000 characters)")
    discount.set_defaults(handler=account_discount)
    listing = verbs.add_parser("discounts", parents=[common], allow_abbrev=False,
                               help="the account's percentage discounts, by instant")
    listing.add_argument("account")
    listing.set_defaults(handler=account_discounts)


def positive_line(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"a line number is a positive integer (got {text!r})")
    return int(text)


def _register_lines(verbs: Any, common: argparse.ArgumentParser) -> None:
    for kind, what in (("credit", "reduces"), ("charge", "adds to")):
        book = verbs.add_parser(kind, parents=[common], allow_abbrev=False,
                                help=f"book a {kind} on the account's open period of a cloud: "
                                f"it {what} the total (admin)")
        book.add_argument("account")
        book.add_argument("--cloud", required=True)
        book.add_argument("--period", required=True, metavar="YYYY-MM")
        book.add_argument("--amount", required=True,
                          help="a positive decimal in the period's currency, e.g. 12.50")
        book.add_argument("--reason", required=True)
        book.add_argument("--at", required=True, metavar="RFC3339",
                          help="the instant it takes effect, inside the period")
        book.add_argument("--project", help="the project of the account it concerns")
        book.set_defaults(handler=account_book, kind=kind)
    reverse = verbs.add_parser("reverse", parents=[common], allow_abbrev=False,
                               help="reverse a credit or charge by a line of the opposite "
                               "kind (admin); lines are never edited or removed")
    reverse.add_argument("account")
    reverse.add_argument("line", type=positive_line, help="the number of the line to reverse")
    reverse.add_argument("--reason", required=True)
    reverse.add_argument("--period", metavar="YYYY-MM",
                         help="the open period to book it on (default: the line's)")
    reverse.add_argument("--at", metavar="RFC3339",
                         help="the instant it takes effect (default: the line's, when "
                         "booked on the line's period)")
    reverse.set_defaults(handler=account_reverse)
    lines = verbs.add_parser("lines", parents=[common], allow_abbrev=False,
                             help="the credits and charges booked on the account")
    lines.add_argument("account")
    lines.add_argument("--cloud")
    lines.add_argument("--period", metavar="YYYY-MM")
    lines.set_defaults(handler=account_lines)


def _register_accounts(sub: Any, common: argparse.ArgumentParser) -> None:
    account = sub.add_parser("account", parents=[common], allow_abbrev=False,
                             help="billing accounts: projects grouped, their statements")
    verbs = account.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = verbs.add_parser("add", parents=[common], allow_abbrev=False,
                           help="add an account (admin)")
    add.add_argument("account")
    add.add_argument("--description", default="")
    add.set_defaults(handler=account_add)
    listing = verbs.add_parser("list", parents=[common], allow_abbrev=False, help="the accounts")
    listing.set_defaults(handler=account_list)
    show = verbs.add_parser("show", parents=[common], allow_abbrev=False,
                            help="an account and its memberships")
    show.add_argument("account")
    show.set_defaults(handler=account_show)
    join = verbs.add_parser("join", parents=[common], allow_abbrev=False,
                            help="put a cloud's project in the account from an instant on "
                            "(admin)")
    join.add_argument("account")
    join.add_argument("--cloud", required=True)
    join.add_argument("--project", required=True)
    join.add_argument("--from", dest="effective_from", required=True, metavar="RFC3339",
                      help="the instant it belongs to the account from, e.g. "
                      "2026-10-15T00:00:00Z")
    join.set_defaults(handler=account_join)
    stmt = verbs.add_parser("statement", parents=[common], allow_abbrev=False,
                            help="the account's statement of a period, per project")
    stmt.add_argument("account")
    stmt.add_argument("--period", required=True, metavar="YYYY-MM")
    stmt.set_defaults(handler=account_statement, csv_ok=True)
    summaries = verbs.add_parser("summaries", parents=[common], allow_abbrev=False,
                                 help="every account's totals of a period, per currency, "
                                 "with its projects")
    summaries.add_argument("--period", required=True, metavar="YYYY-MM")
    summaries.set_defaults(handler=account_summaries, csv_ok=True)
    _register_lines(verbs, common)
    _register_commitments(verbs, common)
    _register_discounts(verbs, common)


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add the billing subcommands to the ``tally`` parser."""
    prices = sub.add_parser("price-list", parents=[common], allow_abbrev=False,
                            help="price list versions of a cloud (or default)")
    actions = prices.add_subparsers(dest="action", required=True, metavar="ACTION")
    put = actions.add_parser("put", parents=[common], allow_abbrev=False,
                             help="add a version from a YAML or JSON file (admin)")
    put.add_argument("cloud", help="a cloud, or default")
    put.add_argument("file")
    put.set_defaults(handler=price_list_put)
    show = actions.add_parser("show", parents=[common], allow_abbrev=False,
                              help="the versions")
    show.add_argument("cloud", help="a cloud, or default")
    show.set_defaults(handler=price_list_show)

    stmt = sub.add_parser("statement", parents=[common], allow_abbrev=False,
                          help="a project's statement of a period, or every project's summary")
    stmt.add_argument("--cloud", required=True)
    stmt.add_argument("--period", required=True, metavar="YYYY-MM")
    stmt.add_argument("--project")
    stmt.set_defaults(handler=statement, csv_ok=True)

    period = sub.add_parser("period", parents=[common], allow_abbrev=False,
                            help="close a period (admin), list a cloud's periods, its "
                            "webhook deliveries and its export")
    verbs = period.add_subparsers(dest="action", required=True, metavar="ACTION")
    close = verbs.add_parser("close", parents=[common], allow_abbrev=False,
                             help="freeze every statement of the period")
    close.add_argument("cloud")
    close.add_argument("period", metavar="YYYY-MM")
    close.add_argument("--accept-unrated", action="store_true",
                       help="close although some lines are unrated: they are never billed "
                       "(recorded on the period)")
    close.add_argument("--accept-partial-history", action="store_true",
                       help="close although the cloud's history began inside the period: "
                       "before it only surviving resources are known (recorded)")
    close.set_defaults(handler=period_close)
    listing = verbs.add_parser("list", parents=[common], allow_abbrev=False,
                               help="periods with status, who closed them and the cutoff")
    listing.add_argument("cloud")
    listing.set_defaults(handler=period_list)
    deliveries = verbs.add_parser("deliveries", parents=[common], allow_abbrev=False,
                                  help="the webhook deliveries of a close, with their "
                                  "attempts (admin)")
    deliveries.add_argument("cloud")
    deliveries.add_argument("period", metavar="YYYY-MM")
    deliveries.set_defaults(handler=period_deliveries)
    again = verbs.add_parser("redeliver", parents=[common], allow_abbrev=False,
                             help="post a webhook delivery again, for a new round of "
                             "attempts (admin)")
    again.add_argument("cloud")
    again.add_argument("period", metavar="YYYY-MM")
    again.add_argument("delivery", metavar="ID", help="the delivery's id (period deliveries)")
    again.set_defaults(handler=period_redeliver)
    export = verbs.add_parser("export", parents=[common], allow_abbrev=False,
                              help="every closed statement of a closed period (--format "
                              "json or csv: the export's exact bytes)")
    export.add_argument("cloud")
    export.add_argument("period", metavar="YYYY-MM")
    export.set_defaults(handler=period_export, csv_ok=True)
    _register_accounts(sub, common)
