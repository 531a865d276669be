"""The ``openstack tally`` billing reads (account, period, delivery), run through the
real ``openstack`` command's entry point (osc.py) against a running tally-reporting: an account holding the member
project, a credit booked on it, then November closed; and the admin writes, each
stored object read back through the API."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from reporting.db.handoff_models import WebhookAttempt, WebhookDelivery
from tests.conftest import sqlite_copy
from tests.functional.billing.history import PRICES
from tests.functional.openstack.cloud import KeystoneCloud, event, keystone_cloud
from tests.functional.openstack.test_openstack_plugin import openstack

MONTH = "2026-11"


def _post(cloud: KeystoneCloud, token: str, path: str, body: dict[str, Any]) -> Any:
    response = requests.post(cloud.api.base_url + path, json=body, timeout=60,
                             headers={"X-Auth-Token": token})
    assert response.status_code in (200, 201), response.text
    return response.json()


def _failed_delivery(url: str, cloud: str = "sim") -> int:
    """A webhook delivery of the close that failed once (no webhook is configured here,
    so the close queued none): what an operator looks at with ``delivery list``; its id."""
    at = dt.datetime(2026, 12, 1, 3, 0, 0)
    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        delivery = WebhookDelivery(cloud=cloud, period=MONTH, event="period.closed",
                                   body="{}", created_at=at, status="failed", attempts=1,
                                   retry_from=0, next_attempt_at=at)
        session.add(delivery)
        session.flush()
        session.add(WebhookAttempt(delivery_id=delivery.id, number=1, attempted_at=at,
                                   status_code=None, error="connection refused"))
        number = delivery.id
    engine.dispose()
    return number


@pytest.fixture(scope="module")
def billing_cloud(tmp_path_factory: pytest.TempPathFactory,
                  sqlite_migrated_template: Path) -> Iterator[tuple[KeystoneCloud, str]]:
    """A keystone cloud and tally-reporting of this module's own, with its database URL."""
    workdir = tmp_path_factory.mktemp("billing-cloud")
    url = sqlite_copy(sqlite_migrated_template, workdir / "tally.sqlite")
    with keystone_cloud(url, workdir) as cloud:
        yield cloud, url


@pytest.fixture(scope="module")
def billed(billing_cloud: tuple[KeystoneCloud, str]) -> KeystoneCloud:
    sqlite_cloud, url = billing_cloud
    admin = sqlite_cloud.token("admin")
    _post(sqlite_cloud, admin, "/v1/accounts", {"account_id": "acme", "description": "Acme"})
    _post(sqlite_cloud, admin, "/v1/accounts/acme/memberships",
          {"cloud": "sim", "project_id": sqlite_cloud.member_project,
           "effective_from": "2026-10-01T00:00:00Z"})
    for document in PRICES:  # priced lines, so the period has a currency
        response = requests.put(sqlite_cloud.api.base_url + "/v1/price-lists/default",
                                json=document, headers={"X-Auth-Token": admin}, timeout=60)
        assert response.status_code == 201, response.text
    _post(sqlite_cloud, admin, "/v1/accounts/acme/lines",
          {"kind": "credit", "cloud": "sim", "period": MONTH, "amount": "1.50",
           "reason": "outage", "effective_at": "2026-11-20T12:00:00Z"})
    _post(sqlite_cloud, admin, "/v1/accounts/acme/commitments",
          {"effective_from": "2026-11-01T00:00:00Z", "currency": "EUR", "minimum": "100.00"})
    _post(sqlite_cloud, admin, "/v1/accounts/acme/discounts",
          {"effective_from": "2026-11-01T00:00:00Z", "percent": "12.5",
           "reason": "framework agreement"})
    _post(sqlite_cloud, admin, f"/v1/periods/sim/{MONTH}/close",
          {"accept_unrated_lines": True, "accept_partial_history": True})
    _failed_delivery(url)
    return sqlite_cloud


def money_text(value: Decimal) -> str:
    return format(value.quantize(Decimal("0.01")), "f")


def test_account_list_and_show(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-auditor", "account", "list", "-f", "json")
    assert done.returncode == 0, done.stderr
    # The write tests below may add accounts of their own first (each worker's order).
    accounts = {row["account_id"]: row for row in json.loads(done.stdout)}
    assert accounts["acme"]["description"] == "Acme"
    done = openstack(billed, "sim-admin", "account", "list")
    assert done.returncode == 0 and "| acme " in done.stdout and "None" not in done.stdout
    done = openstack(billed, "sim-auditor", "account", "show", "acme", "-f", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    (member,) = shown["memberships"]
    assert (member["cloud"], member["project_id"]) == ("sim", billed.member_project)
    done = openstack(billed, "sim-auditor", "account", "show", "acme")
    assert done.returncode == 0, done.stderr
    assert f"sim {billed.member_project} number " in done.stdout
    assert "None" not in done.stdout


def test_account_errors_are_one_line(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-member", "account", "list")
    assert done.returncode == 1 and "403 forbidden" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = openstack(billed, "sim-auditor", "account", "show", "nobody")
    assert done.returncode == 1 and "404 not_found" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = openstack(billed, "sim-auditor", "account", "statement", "nobody",
                     "--period", MONTH)
    assert done.returncode == 1 and "404 not_found" in done.stderr
    done = openstack(billed, "sim-member", "account", "line", "list", "acme")
    assert done.returncode == 1 and "403 forbidden" in done.stderr


def test_account_statement(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-auditor", "account", "statement", "acme", "--period",
                     MONTH, "-f", "json")
    assert done.returncode == 0, done.stderr
    statement = json.loads(done.stdout)
    assert {"status", "provisional", "totals", "projects", "manual_lines"} <= set(statement)
    (totals,) = statement["totals"]
    (section,) = statement["projects"]
    assert section["project_id"] == billed.member_project
    assert [line["amount"] for line in statement["manual_lines"]] == ["-1.50"]
    done = openstack(billed, "sim-auditor", "account", "statement", "acme", "--period", MONTH)
    assert done.returncode == 0, done.stderr
    footer = done.stdout.splitlines()[-1]
    assert footer.startswith(statement["status"]), footer
    assert f"credits and charges {totals['manual_total']}  total {totals['total']}" in footer
    # The discount comes off the usage first; the commitment tops up what is left.
    usage = Decimal(totals["subtotal"]) + Decimal(totals["adjustments_total"])
    off = -(usage * Decimal("0.125")).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)
    assert totals["discount"] == {"effective_from": "2026-11-01T00:00:00.000000Z",
                                  "percent": "12.5", "amount": money_text(off)}
    assert (totals["commitment"]["minimum"], totals["commitment"]["shortfall"]) == (
        "100.00", money_text(Decimal("100.00") - usage - off))
    assert (f"  discount 12.5 % (from 2026-11-01T00:00:00.000000Z) {money_text(off)}"
            "  minimum 100.00 (from 2026-11-01T00:00:00.000000Z)  shortfall ") in footer
    assert "credit line 1: outage" in done.stdout
    assert "None" not in done.stdout, done.stdout
    done = openstack(billed, "sim-auditor", "account", "statement", "acme", "--period", MONTH,
                     "-f", "csv")
    rows = list(csv.DictReader(io.StringIO(done.stdout)))
    assert "None" not in done.stdout and rows[-1]["amount"] == "-1.50", done.stdout


def test_account_summary_list(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-auditor", "account", "summary", "list", "--period", MONTH,
                     "-f", "json")
    assert done.returncode == 0, done.stderr
    # The write tests may add accounts of their own first (each worker's order).
    (row,) = [row for row in json.loads(done.stdout) if row["account_id"] == "acme"]
    done = openstack(billed, "sim-auditor", "account", "statement", "acme", "--period",
                     MONTH, "-f", "json")
    (totals,) = json.loads(done.stdout)["totals"]
    assert (row["status"], row["currency"], row["subtotal"], row["discount"],
            row["shortfall"], row["manual_total"], row["total"], row["projects"]) == (
        "closed", "EUR", totals["subtotal"], totals["discount"]["amount"],
        totals["commitment"]["shortfall"], "-1.50", totals["total"],
        f"sim/{billed.member_project}")
    done = openstack(billed, "sim-admin", "account", "summary", "list", "--period", MONTH)
    assert done.returncode == 0 and "| acme " in done.stdout and "None" not in done.stdout
    done = openstack(billed, "sim-member", "account", "summary", "list", "--period", MONTH)
    assert done.returncode == 1 and "403 forbidden" in done.stderr


def test_account_line_list(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-auditor", "account", "line", "list", "acme", "--cloud", "sim",
                     "--period", MONTH, "-f", "json")
    assert done.returncode == 0, done.stderr
    (line,) = json.loads(done.stdout)
    assert (line["line"], line["kind"], line["amount"], line["reverses"]) == (
        1, "credit", "-1.50", None)
    done = openstack(billed, "sim-admin", "account", "line", "list", "acme")
    assert done.returncode == 0 and "| outage " in done.stdout and "None" not in done.stdout
    done = openstack(billed, "sim-admin", "account", "line", "list", "acme", "--period",
                     "2026-10", "-f", "json")
    assert (done.returncode, json.loads(done.stdout)) == (0, [])


def test_account_commitment_list(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-auditor", "account", "commitment", "list", "acme",
                     "-f", "json")
    assert done.returncode == 0, done.stderr
    (commitment,) = json.loads(done.stdout)
    assert (commitment["effective_from"], commitment["currency"], commitment["minimum"]) == (
        "2026-11-01T00:00:00.000000Z", "EUR", "100.00")
    done = openstack(billed, "sim-admin", "account", "commitment", "list", "acme")
    assert done.returncode == 0 and "| 100.00 " in done.stdout and "None" not in done.stdout
    done = openstack(billed, "sim-member", "account", "commitment", "list", "acme")
    assert done.returncode == 1 and "403 forbidden" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = openstack(billed, "sim-auditor", "account", "commitment", "list", "nobody")
    assert done.returncode == 1 and "404 not_found" in done.stderr


def test_account_discount_list(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-auditor", "account", "discount", "list", "acme",
                     "-f", "json")
    assert done.returncode == 0, done.stderr
    (discount,) = json.loads(done.stdout)
    assert (discount["effective_from"], discount["percent"], discount["reason"]) == (
        "2026-11-01T00:00:00.000000Z", "12.5", "framework agreement")
    done = openstack(billed, "sim-admin", "account", "discount", "list", "acme")
    assert done.returncode == 0 and "| 12.5 " in done.stdout and "None" not in done.stdout
    done = openstack(billed, "sim-member", "account", "discount", "list", "acme")
    assert done.returncode == 1 and "403 forbidden" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    done = openstack(billed, "sim-auditor", "account", "discount", "list", "nobody")
    assert done.returncode == 1 and "404 not_found" in done.stderr


def test_period_list_and_export(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-member", "period", "list", "sim", "-f", "json")
    assert done.returncode == 0, done.stderr
    periods = {row["period"]: row for row in json.loads(done.stdout)}
    assert periods[MONTH]["status"] == "closed"
    done = openstack(billed, "sim-member", "period", "list", "sim")
    assert done.returncode == 0 and f"| {MONTH} " in done.stdout
    assert "None" not in done.stdout
    done = openstack(billed, "sim-auditor", "period", "export", "sim", MONTH, "-f", "json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert sorted(row["project_id"] for row in rows) == sorted(
        [billed.member_project, billed.other_project])
    assert set(rows[0]) == {"number", "project_id", "currency", "subtotal",
                            "adjustments_total", "total", "unrated_lines"}
    done = openstack(billed, "sim-auditor", "period", "export", "sim", MONTH)
    assert done.returncode == 0 and f"| {billed.member_project} " in done.stdout
    closed_at = periods[MONTH]["closed_at"]
    assert done.stdout.splitlines()[-1] == f"sim {MONTH} closed at {closed_at}: 2 statement(s)"
    done = openstack(billed, "sim-member", "period", "export", "sim", MONTH)
    assert done.returncode == 1 and "403 forbidden" in done.stderr
    done = openstack(billed, "sim-auditor", "period", "export", "sim", "2026-12")
    assert done.returncode == 1 and "409 period_open" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_price_list_show(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-member", "price", "list", "show", "default", "-f", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    stored = _api(billed, "/v1/price-lists/default")["items"]
    assert [row["version"] for row in shown] == [item["version"] for item in stored]
    assert len(shown) == len(PRICES)
    assert {row["currency"] for row in shown} == {item["currency"] for item in stored}
    done = openstack(billed, "sim-member", "price", "list", "show", "default")
    assert done.returncode == 0 and "| version " in done.stdout and "None" not in done.stdout
    # A cloud without a list of its own has no versions (the default prices it).
    done = openstack(billed, "sim-member", "price", "list", "show", "sim9", "-f", "json")
    assert (done.returncode, json.loads(done.stdout)) == (0, []), done.stderr
    done = openstack(billed, "sim-member", "price", "list", "show", "c" * 256)
    assert done.returncode == 1 and "400 bad_request" in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_delivery_list(billed: KeystoneCloud) -> None:
    done = openstack(billed, "sim-admin", "delivery", "list", "sim", MONTH, "-f", "json")
    assert done.returncode == 0, done.stderr
    (delivery,) = json.loads(done.stdout)
    assert (delivery["event"], delivery["status"], delivery["attempts"],
            delivery["delivered_at"]) == ("period.closed", "failed", 1, None)
    assert delivery["last_attempt"] == "2026-12-01T03:00:00.000000Z connection refused"
    done = openstack(billed, "sim-admin", "delivery", "list", "sim", MONTH)
    assert done.returncode == 0, done.stderr
    assert "| period.closed |" in done.stdout and "None" not in done.stdout
    done = openstack(billed, "sim-admin", "delivery", "list", "sim", MONTH, "-f", "csv")
    (row,) = list(csv.DictReader(io.StringIO(done.stdout)))
    assert (row["status"], row["delivered_at"]) == ("failed", "-")
    done = openstack(billed, "sim-auditor", "delivery", "list", "sim", MONTH)
    assert done.returncode == 1 and "403 forbidden" in done.stderr


# The writes (admin). They touch only what the reads above do not look at (the account
# globex, the clouds sim2 and sim3, December's open period), so the reads hold whichever runs first.
DECEMBER = "2026-12"


def _refused(done: Any, status: str) -> None:
    """An API refusal: the API's status and code on one line, exit 1."""
    assert done.returncode == 1 and status in done.stderr, (done.returncode, done.stderr)
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def _api(cloud: KeystoneCloud, path: str, **params: str) -> Any:
    response = cloud.get(path, cloud.token("admin"), **params)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def created(billed: KeystoneCloud) -> dict[str, Any]:
    """The account globex, created with ``openstack tally account create``: as shown."""
    done = openstack(billed, "sim-admin", "account", "create", "globex", "--description",
                     "Globex", "-f", "json")
    assert done.returncode == 0, done.stderr
    shown: dict[str, Any] = json.loads(done.stdout)
    return shown


@pytest.fixture(scope="module")
def globex(created: dict[str, Any]) -> str:
    return str(created["account_id"])


def test_account_create(billed: KeystoneCloud, created: dict[str, Any]) -> None:
    assert set(created) == {"account_id", "description", "created_at", "created_by"}
    assert (created["account_id"], created["description"]) == ("globex", "Globex")
    stored = _api(billed, "/v1/accounts/globex")
    # Its memberships are test_account_membership_create's, whichever runs first.
    assert {name: stored[name] for name in created} == created
    done = openstack(billed, "sim-admin", "account", "create", "acme")
    _refused(done, "409 conflict")
    done = openstack(billed, "sim-auditor", "account", "create", "initech")
    _refused(done, "403 forbidden")
    assert billed.get("/v1/accounts/initech", billed.token("admin")).status_code == 404


def test_account_membership_create(billed: KeystoneCloud, globex: str) -> None:
    done = openstack(billed, "sim-admin", "account", "membership", "create", globex,
                     "--cloud", "sim", "--project", billed.other_project,
                     "--effective-from", "2026-12-01T00:00:00Z")
    assert done.returncode == 0, done.stderr
    assert f"| {billed.other_project} " in done.stdout and "None" not in done.stdout
    (member,) = _api(billed, f"/v1/accounts/{globex}")["memberships"]
    assert (member["cloud"], member["project_id"], member["effective_from"]) == (
        "sim", billed.other_project, "2026-12-01T00:00:00.000000Z")
    done = openstack(billed, "sim-admin", "account", "membership", "create", "nobody",
                     "--cloud", "sim", "--project", billed.other_project,
                     "--effective-from", "2026-12-01T00:00:00Z")
    _refused(done, "404 not_found")


def test_account_line_create_and_reverse(billed: KeystoneCloud, globex: str) -> None:
    done = openstack(billed, "sim-admin", "account", "line", "create", globex,
                     "--kind", "charge", "--cloud", "sim", "--period", DECEMBER,
                     "--amount", "5.10", "--reason", "setup fee",
                     "--effective-at", "2026-12-02T00:00:00Z", "-f", "json")
    assert done.returncode == 0, done.stderr
    booked = json.loads(done.stdout)
    assert (booked["kind"], booked["amount"], booked["reason"], booked["reverses"]) == (
        "charge", "5.10", "setup fee", None)
    done = openstack(billed, "sim-admin", "account", "line", "reverse", globex,
                     str(booked["line"]), "--reason", "waived", "-f", "json")
    assert done.returncode == 0, done.stderr
    reversal = json.loads(done.stdout)
    assert (reversal["kind"], reversal["amount"], reversal["reverses"]) == (
        "credit", "-5.10", booked["line"])
    stored = _api(billed, f"/v1/accounts/{globex}/lines")["items"]
    assert [(line["line"], line["amount"], line["reversed_by"]) for line in stored] == [
        (booked["line"], "5.10", reversal["line"]), (reversal["line"], "-5.10", None)]
    # November is closed: nothing more is booked on it.
    done = openstack(billed, "sim-admin", "account", "line", "create", "acme",
                     "--kind", "credit", "--cloud", "sim", "--period", MONTH,
                     "--amount", "1.00", "--reason", "late", "--effective-at",
                     "2026-11-21T00:00:00Z")
    _refused(done, "409 period_closed")
    done = openstack(billed, "sim-admin", "account", "line", "reverse", globex,
                     str(booked["line"]), "--reason", "twice")
    _refused(done, "409 already_reversed")
    assert len(_api(billed, f"/v1/accounts/{globex}/lines")["items"]) == 2


def test_account_commitment_create(billed: KeystoneCloud, globex: str) -> None:
    done = openstack(billed, "sim-admin", "account", "commitment", "create", globex,
                     "--effective-from", "2026-12-01T00:00:00Z", "--currency", "EUR",
                     "--minimum", "50.00", "-f", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["account_id"], shown["currency"], shown["minimum"]) == (
        globex, "EUR", "50.00")
    (stored,) = _api(billed, f"/v1/accounts/{globex}/commitments")["items"]
    assert (stored["effective_from"], stored["currency"], stored["minimum"]) == (
        "2026-12-01T00:00:00.000000Z", "EUR", "50.00")
    done = openstack(billed, "sim-admin", "account", "commitment", "create", globex,
                     "--effective-from", "2027-01-01T00:00:00Z", "--currency", "EUR",
                     "--minimum", "-1")
    _refused(done, "400 invalid_commitment")
    assert len(_api(billed, f"/v1/accounts/{globex}/commitments")["items"]) == 1


def test_account_discount_create(billed: KeystoneCloud, globex: str) -> None:
    done = openstack(billed, "sim-admin", "account", "discount", "create", globex,
                     "--effective-from", "2026-12-01T00:00:00Z", "--percent", "7.25",
                     "--reason", "pilot")
    assert done.returncode == 0, done.stderr
    assert "| 7.25 " in done.stdout and "| pilot " in done.stdout
    (stored,) = _api(billed, f"/v1/accounts/{globex}/discounts")["items"]
    assert (stored["effective_from"], stored["percent"], stored["reason"]) == (
        "2026-12-01T00:00:00.000000Z", "7.25", "pilot")
    done = openstack(billed, "sim-admin", "account", "discount", "create", globex,
                     "--effective-from", "2027-01-01T00:00:00Z", "--percent", "101",
                     "--reason", "too much")
    _refused(done, "400 invalid_discount")
    assert len(_api(billed, f"/v1/accounts/{globex}/discounts")["items"]) == 1


def test_period_close(billed: KeystoneCloud) -> None:
    """A cloud of its own (sim2) whose history begins inside November."""
    instance = {**event(3, billed.other_project), "cloud": "sim2",
                "timestamp": "2026-11-10T00:00:00Z"}
    response = requests.post(billed.api.base_url + "/v1/events", json={"events": [instance]},
                             headers={"X-Auth-Token": billed.token("collector")}, timeout=60)
    assert response.status_code == 200, response.text
    done = openstack(billed, "sim-admin", "period", "close", "sim2", MONTH)
    _refused(done, "409 partial_history")
    assert _api(billed, "/v1/periods/sim2")["items"][-1]["status"] == "open"
    done = openstack(billed, "sim-admin", "period", "close", "sim2", MONTH,
                     "--accept-partial-history", "--accept-unrated-lines", "-f", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["period"], shown["status"]) == (MONTH, "closed")
    assert shown["accepted"].startswith("history from "), shown
    (stored,) = [row for row in _api(billed, "/v1/periods/sim2")["items"]
                 if row["period"] == MONTH]
    assert (stored["status"], stored["closed_at"], stored["accepted_partial_history_from"]) == (
        "closed", shown["closed_at"], "2026-11-10T00:00:00.000000Z")
    # A close is idempotent: a second one answers the closed period as it was closed.
    done = openstack(billed, "sim-admin", "period", "close", "sim2", MONTH, "-f", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["closed_at"] == shown["closed_at"]
    # An open period that has not ended is refused.
    done = openstack(billed, "sim-admin", "period", "close", "sim2", DECEMBER)
    _refused(done, "409 period_not_ended")


def test_delivery_redeliver(billing_cloud: tuple[KeystoneCloud, str],
                            billed: KeystoneCloud) -> None:
    """A failed delivery of sim2's own (delivery list above reads sim's)."""
    number = _failed_delivery(billing_cloud[1], cloud="sim2")
    done = openstack(billed, "sim-admin", "delivery", "redeliver", "sim2", MONTH, str(number),
                     "-f", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["id"], shown["status"], shown["attempts"]) == (number, "pending", 1)
    (stored,) = _api(billed, f"/v1/periods/sim2/{MONTH}/deliveries")["items"]
    assert (stored["id"], stored["status"]) == (number, "pending")
    done = openstack(billed, "sim-admin", "delivery", "redeliver", "sim2", MONTH, "999999")
    _refused(done, "404 not_found")


def test_price_list_create(billed: KeystoneCloud, tmp_path: Path) -> None:
    """A price list of sim3's own (no cloud the tests above rate)."""
    path = tmp_path / "prices.yaml"
    path.write_text("effective_from: 2026-12-01T00:00:00Z\ncurrency: EUR\n"
                    "rates:\n  instance: {per: hour, by_flavor: {m1.small: 0.020}}\n")
    done = openstack(billed, "sim-admin", "price", "list", "create", "sim3", str(path),
                     "-f", "json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert (shown["version"], shown["currency"]) == ("sim3/1", "EUR")
    (stored,) = _api(billed, "/v1/price-lists/sim3")["items"]
    assert stored["version"] == "sim3/1"
    # The YAML number reached the API as the text written, never as a float.
    assert stored["document"]["rates"]["instance"]["by_flavor"]["m1.small"] == "0.020"
    bad = tmp_path / "bad.json"
    bad.write_text('{"effective_from": "2027-01-01T00:00:00Z", "currency": "EUR", '
                   '"rates": {}, "oops": 1}')
    done = openstack(billed, "sim-admin", "price", "list", "create", "sim3", str(bad))
    _refused(done, "400 invalid_price_list")
    done = openstack(billed, "sim-admin", "price", "list", "create", "sim3",
                     str(tmp_path / "missing.yaml"))
    _refused(done, "cannot read ")
    assert len(_api(billed, "/v1/price-lists/sim3")["items"]) == 1
