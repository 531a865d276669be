"""``tally price-list``, ``tally statement``, ``tally period`` against a real API."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from reporting.db.handoff_models import WebhookAttempt, WebhookDelivery
from tallyclient.cli import billing
from tests.functional.billing.history import october
from tests.functional.cli.conftest import Api
from tests.functional.cli.test_cli import run, table_rows
from tests.functional.reporting.fixtures import TOKENS, auth

PRICES_YAML = """\
effective_from: 2026-10-01T00:00:00Z
currency: EUR
zero_rated_projects: [p-free]
rates:
  instance: {per: hour, by_flavor: {m1.small: 0.020}}
  volume: {per: gb_hour, rate: 0.00010, type_modifiers: {ssd: 1.5}}
state_modifiers:
  instance: {shutoff: 0.5}
"""


@pytest.fixture
def priced(api: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Api:
    path = tmp_path / "prices.yaml"
    path.write_text(PRICES_YAML)
    code, out, _err = run(api, capsys, "--format", "json", "price-list", "put", "default",
                          str(path))
    assert code == 0
    version = json.loads(out)
    # YAML numbers reach the API as the text written, never as floats
    assert version["document"]["rates"]["instance"]["by_flavor"]["m1.small"] == "0.020"
    assert version["document"]["effective_from"] == "2026-10-01T00:00:00Z"
    api.ingest(october())
    return api


def test_price_list_show_and_a_bad_file(priced: Api, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(priced, capsys, "price-list", "show", "default")
    assert code == 0 and table_rows(out)[1][:3] == ["default/1", "2026-10-01T00:00:00.000000Z",
                                                     "EUR"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"effective_from": "2026-11-01T00:00:00Z", "currency": "EUR", "rates": {}, '
                   '"oops": 1}')
    code, _out, err = run(priced, capsys, "price-list", "put", "default", str(bad))
    assert code == 1 and "400 invalid_price_list" in err and "oops" in err
    code, _out, err = run(priced, capsys, "price-list", "put", "default", str(tmp_path / "no"))
    assert code == 2 and "cannot read" in err


def test_statement_table_json_csv(priced: Api, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(priced, capsys, "statement", "--cloud", "c1", "--period", "2026-10",
                          "--project", "p1")
    assert code == 0
    assert "open (provisional)  EUR subtotal 1.66" in out  # one version: inst-b 48 h at 0.020
    code, out, _err = run(priced, capsys, "--format", "json", "statement", "--cloud", "c1",
                          "--period", "2026-10", "--project", "p1")
    lines = json.loads(out)["lines"]
    code, out, _err = run(priced, capsys, "statement", "--cloud", "c1", "--period", "2026-10",
                          "--project", "p1", "--format", "csv")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["amount"] for r in rows if r["record"] == "line"] == [
        x["amount"] or "" for x in lines]
    assert {r["record"]: r["value"] for r in rows}["subtotal"] == "1.66"
    code, out, _err = run(priced, capsys, "statement", "--cloud", "c1", "--period", "2026-10",
                          "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [(r["project_id"], r["total"]) for r in rows] == [
        ("p-free", "0.00"), ("p1", "1.66"), ("p2", "0.48"), ("p3", "0.00")]
    code, _out, err = run(priced, capsys, "inventory", "--format", "csv")
    assert code == 2 and "statement" in err


def test_period_close_and_list(priced: Api, capsys: pytest.CaptureFixture[str]) -> None:
    # c1's history begins inside October (its first notification is dated 10-02) and
    # p3's x.odd instance has no rate: each is refused until accepted explicitly
    code, _out, err = run(priced, capsys, "period", "close", "c1", "2026-10")
    assert code == 1 and "409 partial_history" in err and "2026-10-02T00:00:00" in err
    code, _out, err = run(priced, capsys, "period", "close", "c1", "2026-10",
                          "--accept-partial-history")
    assert code == 1 and "409 unrated_lines" in err and "1 unrated line(s)" in err
    code, out, _err = run(priced, capsys, "period", "close", "c1", "2026-10",
                          "--accept-partial-history", "--accept-unrated")
    assert code == 0 and table_rows(out)[1][:2] == ["2026-10", "closed"]
    assert table_rows(out)[1][-1] == "1 unrated lines; history from 2026-10-02T00:00:00.000000Z"
    code, _out, err = run(priced, capsys, "period", "close", "c1", "2999-01")
    assert code == 1 and "409 period_not_ended" in err
    code, _out, err = run(priced, capsys, "period", "close", "c1", "2026-10", role="read")
    assert code == 1 and "403" in err
    code, out, _err = run(priced, capsys, "--format", "json", "period", "list", "c1")
    periods = {p["period"]: p["status"] for p in json.loads(out)}
    assert periods["2026-10"] == "closed" and periods["2026-11"] == "open"


@pytest.mark.parametrize("argv", [
    ["statement", "--cloud", "c1", "--period", "2026-10", "--project", "p1"],
    ["statement", "--cloud", "c1", "--period", "2026-10", "--project", "p1", "--format", "csv"],
    ["--format", "json", "price-list", "show", "default"],
])
def test_a_reader_that_stops_early_ends_the_command_quietly(priced: Api, argv: list[str]) -> None:
    """``tally … | head -1``: the reader is gone before the command writes (its end of
    the pipe closed first, so every write fails): no traceback, the exit status of a
    command SIGPIPE ended."""
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run(  # noqa: S603 - this interpreter, fixed arguments
            [sys.executable, "-m", "tallyclient.cli.main", "--url", priced.url, "--token",
             TOKENS["read"], *argv], stdout=write, stderr=subprocess.PIPE, timeout=120,
            check=False)
    finally:
        os.close(write)
    assert done.stderr.decode() == ""
    assert done.returncode == 141


def test_account_add_join_show_and_statement(priced: Api,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run(priced, capsys, "account", "add", "acme", "--description", "Acme")
    assert code == 0 and table_rows(out)[1][:2] == ["acme", "Acme"]
    code, out, _err = run(priced, capsys, "account", "join", "acme", "--cloud", "c1",
                          "--project", "p1", "--from", "2026-10-02T05:00:00Z")
    assert code == 0 and table_rows(out)[1][:4] == ["acme", "c1", "p1", "1"]
    code, _out, err = run(priced, capsys, "account", "join", "acme", "--cloud", "c1",
                          "--project", "p1", "--from", "2026-10-02T05:00:00Z")
    assert code == 1 and "409 conflict" in err
    code, out, _err = run(priced, capsys, "account", "list")
    assert code == 0 and [row[0] for row in table_rows(out)[1:]] == ["acme"]
    code, out, _err = run(priced, capsys, "account", "show", "acme")
    assert code == 0 and "2026-10-02T05:00:00.000000Z" in out
    # p1 from 05:00 on the 2nd: inst-a loses its first 5 h (0.10) of p1's 1.66.
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10")
    assert code == 0 and "open (provisional)  EUR subtotal 1.56" in out
    code, out, _err = run(priced, capsys, "--format", "json", "account", "statement", "acme",
                          "--period", "2026-10")
    assert code == 0 and json.loads(out)["totals"][0]["total"] == "1.56"
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10",
                          "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["record"]: r["value"] for r in rows}["account_total"] == "1.56"
    code, _out, err = run(priced, capsys, "account", "statement", "nobody", "--period",
                          "2026-10")
    assert code == 1 and "404" in err


def test_account_summaries_every_page_as_table_json_csv(
        priced: Api, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    for account in ("gamma", "beta", "acme"):
        assert run(priced, capsys, "account", "add", account)[0] == 0
    # p1 in acme until 05:00 on the 2nd (inst-a's first 5 h: 0.10), then in beta (1.56);
    # p2 in acme (inst-b's day there: 0.48); half of acme's 0.58 off
    for account, project, at in (("acme", "p1", "2026-09-01T00:00:00Z"),
                                 ("beta", "p1", "2026-10-02T05:00:00Z"),
                                 ("acme", "p2", "2026-10-01T00:00:00Z")):
        assert run(priced, capsys, "account", "join", account, "--cloud", "c1", "--project",
                   project, "--from", at)[0] == 0
    assert run(priced, capsys, "account", "discount", "acme", "--from",
               "2026-10-01T00:00:00Z", "--percent", "50", "--reason", "deal")[0] == 0
    monkeypatch.setattr(billing, "SUMMARY_PAGE", 1)  # three pages of one account
    code, out, err = run(priced, capsys, "account", "summaries", "--period", "2026-10")
    assert (code, err) == (0, "")
    assert table_rows(out) == [
        ["account_id", "status", "currency", "subtotal", "adjustments_total", "discount",
         "shortfall", "manual_total", "total", "unrated_lines", "projects"],
        ["acme", "open", "EUR", "0.58", "0.00", "-0.29", "-", "0.00", "0.29", "0",
         "c1/p1 c1/p2"],
        ["beta", "open", "EUR", "1.56", "0.00", "-", "-", "0.00", "1.56", "0", "c1/p1"],
        ["gamma", "open", "-", "-", "-", "-", "-", "-", "-", "-", "-"]]
    code, out, _err = run(priced, capsys, "--format", "json", "account", "summaries",
                          "--period", "2026-10", role="read")
    items = json.loads(out)
    api = requests.get(f"{priced.url}/v1/account-summaries", params={"period": "2026-10"},
                       headers=auth("read"), timeout=30).json()["items"]
    assert code == 0 and [(x["account_id"], x["sections"], x["totals"]) for x in items] == [
        (x["account_id"], x["sections"], x["totals"]) for x in api]
    code, out, _err = run(priced, capsys, "account", "summaries", "--period", "2026-10",
                          "--format", "csv")
    one_page = requests.get(f"{priced.url}/v1/account-summaries", timeout=30,
                            params={"period": "2026-10"},
                            headers={**auth("read"), "Accept": "text/csv"})
    assert code == 0 and out == one_page.text
    assert [(r["account_id"], r["record"], r["total"])
            for r in csv.DictReader(io.StringIO(out))] == [
        ("acme", "section", "0.10"), ("acme", "section", "0.48"), ("acme", "total", "0.29"),
        ("beta", "section", "1.56"), ("beta", "total", "1.56")]
    code, _out, err = run(priced, capsys, "account", "summaries", "--period", "2999-01")
    assert code == 1 and "409 period_not_started" in err
    code, _out, err = run(priced, capsys, "account", "summaries", "--period", "2026-13")
    assert code == 1 and "400 bad_request" in err


def test_account_credit_charge_reverse_and_lines(priced: Api,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    run(priced, capsys, "account", "add", "acme")
    code, _out, _err = run(priced, capsys, "account", "join", "acme", "--cloud", "c1",
                           "--project", "p1", "--from", "2026-10-02T05:00:00Z")
    assert code == 0
    code, out, _err = run(priced, capsys, "account", "credit", "acme", "--cloud", "c1",
                          "--period", "2026-10", "--amount", "2.00", "--reason", "outage",
                          "--at", "2026-10-07T00:00:00Z")
    assert code == 0 and table_rows(out)[1][:7] == [
        "1", "c1", "2026-10", "-", "credit", "-2.00", "EUR"]
    code, out, _err = run(priced, capsys, "--format", "json", "account", "charge", "acme",
                          "--cloud", "c1", "--period", "2026-10", "--amount", "0.30",
                          "--reason", "support", "--at", "2026-10-08T00:00:00Z",
                          "--project", "p1")
    assert code == 0 and json.loads(out)["project_id"] == "p1"
    code, out, _err = run(priced, capsys, "account", "reverse", "acme", "1", "--reason",
                          "granted twice")
    assert code == 0 and table_rows(out)[1][:9] == [
        "3", "c1", "2026-10", "-", "charge", "2.00", "EUR", "2026-10-07T00:00:00.000000Z", "1"]
    code, _out, err = run(priced, capsys, "account", "reverse", "acme", "1", "--reason", "again")
    assert code == 1 and "409 already_reversed" in err
    code, _out, err = run(priced, capsys, "account", "credit", "acme", "--cloud", "c1",
                          "--period", "2026-10", "--amount", "0.001", "--reason", "x",
                          "--at", "2026-10-07T00:00:00Z")
    assert code == 1 and "400 invalid_line" in err and "minor unit" in err
    code, out, _err = run(priced, capsys, "account", "lines", "acme")
    assert code == 0 and [(r[0], r[9]) for r in table_rows(out)[1:]] == [
        ("1", "3"), ("2", "-"), ("3", "-")]
    # p1 from 05:00 is 1.56 of usage; -2.00 + 0.30 + 2.00 = 0.30 by hand: 1.86.
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10")
    assert code == 0
    assert "EUR subtotal 1.56  adjustments 0.00  credits and charges 0.30  total 1.86" in out
    assert "charge line 3 reversing line 1: granted twice" in out
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10",
                          "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["amount"] for r in rows if r["record"] == "manual_line"] == [
        "-2.00", "0.30", "2.00"]
    assert {r["record"]: r["value"] for r in rows}["account_total"] == "1.86"


def test_period_deliveries_and_export(priced: Api, capsys: pytest.CaptureFixture[str]) -> None:
    code, _out, err = run(priced, capsys, "period", "export", "c1", "2026-10")
    assert code == 1 and "409 period_open" in err
    code, _out, _err = run(priced, capsys, "period", "close", "c1", "2026-10",
                           "--accept-partial-history", "--accept-unrated")
    assert code == 0
    exported = requests.get(f"{priced.url}/v1/periods/c1/2026-10/export?format=csv",
                            headers=auth("read"), timeout=30).text
    code, out, _err = run(priced, capsys, "--format", "csv", "period", "export", "c1",
                          "2026-10")
    assert code == 0 and out == exported  # the export's bytes, for a file
    code, out, _err = run(priced, capsys, "--format", "json", "period", "export", "c1",
                          "2026-10")
    assert code == 0 and [s["number"] for s in json.loads(out)["statements"]] == [1, 2, 3, 4]
    code, out, _err = run(priced, capsys, "period", "export", "c1", "2026-10")
    assert code == 0 and [row[:2] for row in table_rows(out)[1:5]] == [
        ["1", "p-free"], ["2", "p1"], ["3", "p2"], ["4", "p3"]]
    assert "4 statement(s)" in out
    # no webhook configured: no delivery; one written as a close would, to list it
    code, out, _err = run(priced, capsys, "--format", "json", "period", "deliveries", "c1",
                          "2026-10")
    assert code == 0 and json.loads(out)["items"] == []
    at = dt.datetime(2026, 11, 1)
    with priced.sessions.begin() as session:
        session.add(WebhookDelivery(cloud="c1", period="2026-10", event="period.closed",
                                    body="{}", created_at=at, status="pending", attempts=1,
                                    retry_from=0, next_attempt_at=at + dt.timedelta(seconds=30)))
        session.flush()
        session.add(WebhookAttempt(delivery_id=1, number=1, attempted_at=at, status_code=500,
                                   error="HTTP 500"))
    code, out, _err = run(priced, capsys, "period", "deliveries", "c1", "2026-10")
    rows = table_rows(out)
    assert code == 0 and rows[0][:3] == ["id", "event", "status"]
    assert rows[1][:3] == ["1", "period.closed", "pending"] and rows[1][-1].endswith("HTTP 500")
    code, _out, err = run(priced, capsys, "period", "deliveries", "c1", "2026-10", role="read")
    assert code == 1 and "403" in err
    code, out, _err = run(priced, capsys, "--format", "json", "period", "redeliver", "c1",
                          "2026-10", "1")
    assert code == 0 and json.loads(out)["status"] == "pending"
    code, _out, err = run(priced, capsys, "period", "redeliver", "c1", "2026-10", "7")
    assert code == 1 and "404" in err


def test_account_commit_commitments_and_the_statement(priced: Api,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run(priced, capsys, "account", "add", "acme")
    code, _out, _err = run(priced, capsys, "account", "join", "acme", "--cloud", "c1",
                           "--project", "p1", "--from", "2026-10-02T05:00:00Z")
    assert code == 0
    code, out, _err = run(priced, capsys, "account", "commit", "acme", "--from",
                          "2026-10-01T00:00:00Z", "--currency", "EUR", "--minimum", "2")
    assert code == 0 and table_rows(out)[1][:4] == [
        "acme", "2026-10-01T00:00:00.000000Z", "EUR", "2.00"]
    code, _out, err = run(priced, capsys, "account", "commit", "acme", "--from",
                          "2026-10-01T00:00:00Z", "--currency", "EUR", "--minimum", "3")
    assert code == 1 and "409 conflict" in err
    code, _out, err = run(priced, capsys, "account", "commit", "acme", "--from",
                          "2026-10-15T00:00:00Z", "--currency", "EUR", "--minimum", "3")
    assert code == 1 and "400 invalid_commitment" in err and "month's start" in err
    code, out, _err = run(priced, capsys, "--format", "json", "account", "commit", "acme",
                          "--from", "2026-11-01T00:00:00Z", "--currency", "EUR",
                          "--minimum", "0")
    assert code == 0 and json.loads(out)["minimum"] == "0.00"
    code, out, _err = run(priced, capsys, "account", "commitments", "acme")
    assert code == 0 and [(r[1][:10], r[3]) for r in table_rows(out)[1:]] == [
        ("2026-10-01", "2.00"), ("2026-11-01", "0.00")]
    # p1 from 05:00 is 1.56 of usage: 0.44 short of 2.00.
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10")
    assert code == 0
    assert ("EUR subtotal 1.56  adjustments 0.00  minimum 2.00 (from "
            "2026-10-01T00:00:00.000000Z)  shortfall 0.44  credits and charges 0.00  "
            "total 2.00") in out
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10",
                          "--format", "csv")
    values = {r["record"]: r["value"] for r in csv.DictReader(io.StringIO(out))}
    assert (values["account_commitment_minimum"], values["account_commitment_shortfall"],
            values["account_total"]) == ("2.00", "0.44", "2.00")
    # November's "0" ended it: no commitment there.
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-11")
    assert code == 0 and "minimum" not in out



def test_account_statement_names_a_cloud_whose_month_is_not_billable(
        priced: Api, capsys: pytest.CaptureFixture[str]) -> None:
    # c1 is first heard on 10-02: its September is before its history
    run(priced, capsys, "account", "add", "acme")
    code, _out, _err = run(priced, capsys, "account", "join", "acme", "--cloud", "c1",
                           "--project", "p1", "--from", "2026-09-01T00:00:00Z")
    assert code == 0
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-09")
    assert code == 0
    assert ("no project in the period\nno section of cloud c1: period 2026-09 of c1 is not "
            "billable: it ends before the cloud's history begins at "
            "2026-10-02T00:00:00.000000Z (the first notification the collector heard)") in out


def test_account_discount_discounts_and_the_statement(priced: Api,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    run(priced, capsys, "account", "add", "acme")
    code, _out, _err = run(priced, capsys, "account", "join", "acme", "--cloud", "c1",
                           "--project", "p1", "--from", "2026-10-02T05:00:00Z")
    assert code == 0
    code, out, _err = run(priced, capsys, "account", "discount", "acme", "--from",
                          "2026-10-01T00:00:00Z", "--percent", "12.50", "--reason",
                          "framework agreement")
    assert code == 0
    (row,) = table_rows(out)[1:]
    assert (row[:3], row[-1]) == (["acme", "2026-10-01T00:00:00.000000Z", "12.5"],
                                  "framework agreement")
    code, _out, err = run(priced, capsys, "account", "discount", "acme", "--from",
                          "2026-10-01T00:00:00Z", "--percent", "20", "--reason", "again")
    assert code == 1 and "409 conflict" in err
    code, _out, err = run(priced, capsys, "account", "discount", "acme", "--from",
                          "2026-11-01T00:00:00Z", "--percent", "12.345", "--reason", "r")
    assert code == 1 and "400 invalid_discount" in err and "more than 2 decimals" in err
    code, out, _err = run(priced, capsys, "--format", "json", "account", "discount", "acme",
                          "--from", "2026-11-01T00:00:00Z", "--percent", "0",
                          "--reason", "agreement ended")
    assert code == 0 and json.loads(out)["percent"] == "0"
    code, out, _err = run(priced, capsys, "account", "discounts", "acme")
    assert code == 0 and [(r[1][:10], r[2]) for r in table_rows(out)[1:]] == [
        ("2026-10-01", "12.5"), ("2026-11-01", "0")]
    # p1 from 05:00 is 1.56 of usage: 12.5 % is 0.195, 0.20 off (half-even); a minimum of
    # 2.00 tops the 1.36 left up by 0.64.
    code, _out, _err = run(priced, capsys, "account", "commit", "acme", "--from",
                           "2026-10-01T00:00:00Z", "--currency", "EUR", "--minimum", "2")
    assert code == 0
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10")
    assert code == 0
    assert ("EUR subtotal 1.56  adjustments 0.00  discount 12.5 % (from "
            "2026-10-01T00:00:00.000000Z) -0.20  minimum 2.00 (from "
            "2026-10-01T00:00:00.000000Z)  shortfall 0.64  credits and charges 0.00  "
            "total 2.00") in out
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-10",
                          "--format", "csv")
    values = {r["record"]: r["value"] for r in csv.DictReader(io.StringIO(out))}
    assert (values["account_discount_percent"], values["account_discount_amount"],
            values["account_commitment_shortfall"], values["account_total"]) == (
        "12.5", "-0.20", "0.64", "2.00")
    # November's "0" ended it: no discount there.
    code, out, _err = run(priced, capsys, "account", "statement", "acme", "--period", "2026-11")
    assert code == 0 and "discount" not in out


TIERED_YAML = """\
effective_from: 2026-10-01T00:00:00Z
currency: EUR
rates:
  instance: {per: hour, by_flavor: {m1.small: 0.020}}
  volume:
    per: gb_hour
    type_modifiers: {ssd: 1.5}
    mode: graduated
    tiers:
      - {up_to: 500, rate: 0.0002}
      - {up_to: null, rate: 0.0001}
"""


def test_price_list_put_with_tiers_and_the_tier_line_in_the_table(
        priced: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tiered.yaml"
    path.write_text(TIERED_YAML)
    code, out, _err = run(priced, capsys, "--format", "json", "price-list", "put", "c1",
                          str(path))
    assert code == 0
    # YAML numbers reach the API as the text written, null stays the open tier's bound
    assert json.loads(out)["document"]["rates"]["volume"]["tiers"] == [
        {"up_to": "500", "rate": "0.0002"}, {"up_to": None, "rate": "0.0001"}]
    code, out, _err = run(priced, capsys, "statement", "--cloud", "c1", "--period", "2026-10",
                          "--project", "p1")
    assert code == 0
    # vol-a: 100 GB ssd for 24 h = 2400 GB-h, its line 2400 x 0.0002 x 1.5 = 0.72; the
    # tiers price 500 x 0.0002 + 1900 x 0.0001 = 0.29, x 1.5 (W / Q = 3600 / 2400) = 0.435:
    # the tier line -0.285 -> -0.28 (half-even)
    (tier,) = [row for row in table_rows(out) if "graduated tiers" in " ".join(row)]
    assert "-0.28" in tier and "2400" in tier
    assert "graduated tiers: 500 at 0.0002, 1900 at 0.0001" in " ".join(tier)


VOLUME_TYPE_TIERED_YAML = """\
effective_from: 2026-10-01T00:00:00Z
currency: EUR
rates:
  instance: {per: hour, by_flavor: {m1.small: 0.020}}
  volume:
    per: gb_hour
    rate: 0.0001
    by_volume_type:
      ssd:
        mode: graduated
        tiers:
          - {up_to: 500, rate: 0.0003}
          - {up_to: null, rate: 0.0001}
"""


def test_a_volume_types_tier_line_in_the_table_names_its_type(
        priced: Api, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "volume-types.yaml"
    path.write_text(VOLUME_TYPE_TIERED_YAML)
    code, _out, _err = run(priced, capsys, "price-list", "put", "c1", str(path))
    assert code == 0
    code, out, _err = run(priced, capsys, "statement", "--cloud", "c1", "--period", "2026-10",
                          "--project", "p1")
    assert code == 0
    # vol-a: 100 GB ssd for 24 h = 2400 GB-h, its line 2400 x 0.0003 = 0.72; ssd's own
    # tiers price 500 x 0.0003 + 1900 x 0.0001 = 0.15 + 0.19 = 0.34: the tier line -0.38
    (tier,) = [row for row in table_rows(out) if "graduated tiers" in " ".join(row)]
    assert "-0.38" in tier and "2400" in tier
    assert "graduated tiers of volume type ssd: 500 at 0.0003, 1900 at 0.0001" in " ".join(tier)
