"""The ``openstack tally`` billing reads (account, period, delivery), run as the real
``openstack`` command against a running tally-reporting: an account holding the member
project, a credit booked on it, then November closed."""

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
from tests.functional.openstack.cloud import KeystoneCloud, keystone_cloud
from tests.functional.openstack.test_openstack_plugin import openstack

MONTH = "2026-11"


def _post(cloud: KeystoneCloud, token: str, path: str, body: dict[str, Any]) -> Any:
    response = requests.post(cloud.api.base_url + path, json=body, timeout=60,
                             headers={"X-Auth-Token": token})
    assert response.status_code in (200, 201), response.text
    return response.json()


def _failed_delivery(url: str) -> None:
    """A webhook delivery of the close that failed once (no webhook is configured here,
    so the close queued none): what an operator looks at with ``delivery list``."""
    at = dt.datetime(2026, 12, 1, 3, 0, 0)
    engine = create_engine(url)
    with Session(engine) as session, session.begin():
        delivery = WebhookDelivery(cloud="sim", period=MONTH, event="period.closed",
                                   body="{}", created_at=at, status="failed", attempts=1,
                                   retry_from=0, next_attempt_at=at)
        session.add(delivery)
        session.flush()
        session.add(WebhookAttempt(delivery_id=delivery.id, number=1, attempted_at=at,
                                   status_code=None, error="connection refused"))
    engine.dispose()


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
    (account,) = json.loads(done.stdout)
    assert (account["account_id"], account["description"]) == ("acme", "Acme")
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
