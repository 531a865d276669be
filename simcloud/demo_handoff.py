"""The demo's last step: the simulated month billed to an account and handed off.

After the statements are checked against the truth (``simcloud.billing_check``), the
demo does what an operator does at a month's end, all through the Reporting API:

- a keystone domain's billing account (the one the demo's price list gives terms:
  ``simcloud.billing_check.demo_prices``; else the first billed project's), which the
  syncs booked every project of the domain into (``adapter_config``
  ``accounts_by_domain``), given a dated percentage discount, a minimum commitment
  above its usage (so the account is topped up to it) and a credit booked by hand;
- the close of the month (accepting, explicitly, that Tally's history of the simulated
  cloud begins inside it, and unrated lines if the statements show some);
- the signed ``period.closed`` webhook, received by a local "invoicing system" that
  checks the HMAC-SHA256 signature of the bytes it received;
- the export of the closed statements (CSV) into the workdir.

Each step is checked: the account holds exactly the projects of that domain, and its
total is the sum of its projects' own statements less the discount (rounded once to
the currency's minor unit), topped up to the minimum commitment, plus the credit,
the webhook lists the same statement numbers as the export, and the signature holds.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import http.server
import json
import threading
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

import requests

from mapping.event import format_timestamp

# The demo cloud's adapter_config accounts_by_domain: e.g. sim-d-acme.
ACCOUNTS_BY_DOMAIN = "{cloud}-{domain_id}"
CREDIT = "5.00"
DISCOUNT_PERCENT = "10"
WEBHOOK_WAIT_S = 60.0


def commitment_above(usage: Decimal) -> Decimal:
    """The demo's minimum commitment: the next whole hundred above the usage, so the
    statement shows a shortfall (a whole number: valid in every currency)."""
    return (usage // 100 + 1) * 100


def discount_off(usage: Decimal, percent: str) -> Decimal:
    """What ``percent`` takes off ``usage`` (negative), rounded once, half-even, to
    the usage's places (a statement's amounts are in its currency's minor unit)."""
    places = Decimal(1).scaleb(min(usage.as_tuple().exponent, 0))  # type: ignore[arg-type]
    return -(usage * Decimal(percent) / 100).quantize(places, rounding=ROUND_HALF_EVEN)


class InvoicingReceiver:
    """A local HTTP receiver of the close's webhook: keeps each POST whose signature
    is the HMAC-SHA256 of its body with the shared secret, counts the others."""

    def __init__(self, secret: str) -> None:
        self.secret = secret.encode()
        self.received: list[dict[str, Any]] = []
        self.bad_signatures = 0
        self._arrived = threading.Event()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                expected = "sha256=" + hmac.new(receiver.secret, body,
                                                hashlib.sha256).hexdigest()
                if hmac.compare_digest(self.headers.get("X-Tally-Signature", ""), expected):
                    receiver.received.append(json.loads(body))
                    receiver._arrived.set()
                    self.send_response(204)
                else:
                    receiver.bad_signatures += 1
                    self.send_response(401)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # the demo's output is its summary

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/tally-webhook"
        threading.Thread(target=self._server.serve_forever, name="invoicing-receiver",
                         daemon=True).start()

    def wait(self, timeout: float) -> bool:
        return self._arrived.wait(timeout)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class HandOff:
    """The month's close and hand-off against the API at ``api_url``."""

    def __init__(self, api_url: str, token: str, cloud: str, workdir: Path,
                 receiver: InvoicingReceiver, account: str | None = None) -> None:
        self.api_url = api_url
        self.account = account  # None: the account of the first billed project
        self.cloud = cloud
        self.workdir = workdir
        self.receiver = receiver
        self._headers = {"Authorization": f"Bearer {token}"}

    def _send(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        response = requests.request(method, f"{self.api_url}{path}", json=body,
                                    params=params, headers=self._headers, timeout=120)
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {response.status_code}: "
                               f"{response.text[:300]}")
        return response

    def run(self, period: str, period_start: dt.datetime, period_end: dt.datetime,
            now: dt.datetime) -> bool:
        """Print the steps; True when every check held (or the month has not ended)."""
        print()
        if now < period_end:
            print(f"Hand-off of {period}: not closed, the month ends at "
                  f"{format_timestamp(period_end)}")
            return True
        summaries = self._send("GET", "/v1/statements", cloud=self.cloud, period=period,
                               limit=1000).json()["items"]
        billed = [item for item in summaries if Decimal(item["subtotal"]) > 0]
        if not billed:
            print(f"Hand-off of {period}: nothing billed, nothing to hand off")
            return True
        account, members = (self._domain_account(billed[0]["project_id"])
                            if self.account is None else (self.account, self._members(
                                self.account)))
        # By hand: the account's usage is its projects' own statements added up.
        usage = sum((Decimal(item["subtotal"]) + Decimal(item["adjustments_total"])
                     for item in summaries if item["project_id"] in members), Decimal(0))
        minimum = commitment_above(usage)
        self._credit(account, period, period_start)
        statement = f"/v1/accounts/{account}/statement"
        held = self._send("GET", statement, period=period).json()
        currency = held["totals"][0]["currency"]
        sections_ok = {section["project_id"] for section in held["projects"]} <= members
        self._send("POST", f"/v1/accounts/{account}/discounts", {
            "effective_from": format_timestamp(period_start), "percent": DISCOUNT_PERCENT,
            "reason": "demo: a negotiated discount"})
        self._send("POST", f"/v1/accounts/{account}/commitments", {
            "effective_from": format_timestamp(period_start), "currency": currency,
            "minimum": str(minimum)})
        totals = self._send("GET", statement, period=period).json()["totals"][0]
        # By hand: the discount off the usage, rounded once half-even to the usage's
        # places (the currency's minor unit); the discounted usage below the minimum is
        # topped up to it; the credit comes after.
        discount = discount_off(usage, DISCOUNT_PERCENT)
        discounted = usage + discount
        expected = max(discounted, minimum) - Decimal(CREDIT)
        commitment = totals.get("commitment") or {}
        applied = totals.get("discount") or {}
        account_ok = sections_ok and Decimal(totals["total"]) == expected \
            and Decimal(applied.get("amount", "NaN")) == discount \
            and Decimal(commitment.get("shortfall", "NaN")) == minimum - discounted
        print(f"Hand-off of {period}:")
        print(f"  account {account} (its keystone domain's {len(members)} projects, booked "
              f"by the syncs): subtotal {totals['subtotal']}, "
              f"discount {applied.get('percent')} % {applied.get('amount')}, "
              f"minimum commitment {commitment.get('minimum')} (shortfall "
              f"{commitment.get('shortfall')}), credits and charges {totals['manual_total']}, "
              f"total {totals['total']} {totals['currency']} "
              f"({'as computed by hand' if account_ok else 'WRONG'})")
        unrated = sum(item["unrated_lines"] for item in summaries)
        closed = self._send("POST", f"/v1/periods/{self.cloud}/{period}/close", {
            "accept_partial_history": True, "accept_unrated_lines": unrated > 0}).json()
        print(f"  closed at {closed['closed_at']}, accepting a history begun at "
              f"{closed['accepted_partial_history_from']}"
              + (f" and {unrated} unrated line(s)" if unrated else ""))
        export = self._send("GET", f"/v1/periods/{self.cloud}/{period}/export",
                            format="json").json()
        numbers = [statement["number"] for statement in export["statements"]]
        csv_path = self.workdir / f"statements-{self.cloud}-{period}.csv"
        csv_path.write_bytes(self._send("GET", f"/v1/periods/{self.cloud}/{period}/export",
                                        format="csv").content)
        print(f"  exported {len(numbers)} numbered statements ({numbers[0]}..{numbers[-1]}) "
              f"to {csv_path}")
        summaries_ok = self._account_summaries(period, account, totals, set(numbers))
        return self._webhook(numbers) and account_ok and summaries_ok

    def _account_summaries(self, period: str, account: str, totals: dict[str, Any],
                           numbers: set[int]) -> bool:
        """Every account's summary of the closed month: the handed-off account's totals
        are its statement's, and each of its sections cut from a closed statement (a
        member without usage has none) names an exported one."""
        items = self._send("GET", "/v1/account-summaries", period=period).json()["items"]
        mine = next((item for item in items if item["account_id"] == account), None)
        named = [s["number"] for s in ([] if mine is None else mine["sections"])
                 if "number" in s]
        ok = mine is not None and mine["totals"] == [totals] and mine["status"] == "closed" \
            and bool(named) and set(named) <= numbers
        print(f"  account summaries: {len(items)} account(s); {account}'s total "
              f"{totals['total']} {totals['currency']} is its statement's, its "
              f"{len(named)} section(s) with a closed statement name exported statements "
              f"({'yes' if ok else 'NO'})")
        return ok

    def _members(self, account: str) -> set[str]:
        shown = self._send("GET", f"/v1/accounts/{account}").json()
        return {m["project_id"] for m in shown["memberships"] if m["cloud"] == self.cloud}

    def _domain_account(self, project: str) -> tuple[str, set[str]]:
        """The account the syncs booked ``project`` into, and its projects."""
        for item in self._send("GET", "/v1/accounts", limit=1000).json()["items"]:
            members = self._members(item["account_id"])
            if project in members:
                return item["account_id"], members
        raise RuntimeError(f"no billing account holds project {project}: the syncs booked "
                           "no default account (adapter_config accounts_by_domain)")

    def _credit(self, account: str, period: str, period_start: dt.datetime) -> None:
        self._send("POST", f"/v1/accounts/{account}/lines", {
            "kind": "credit", "cloud": self.cloud, "period": period, "amount": CREDIT,
            "reason": "demo: a goodwill credit for an outage",
            "effective_at": format_timestamp(period_start + dt.timedelta(days=1))})

    def _webhook(self, numbers: list[int]) -> bool:
        if not self.receiver.wait(WEBHOOK_WAIT_S):
            print(f"  webhook: nothing received within {WEBHOOK_WAIT_S:g}s (NO)")
            return False
        notice = self.receiver.received[0]
        same = [s["number"] for s in notice["statements"]] == numbers
        print(f"  webhook {notice['event']} received by the invoicing receiver, signature "
              f"verified; its statements {'match' if same else 'DO NOT match'} the export"
              + (f"; {self.receiver.bad_signatures} bad signature(s)"
                 if self.receiver.bad_signatures else ""))
        return same and not self.receiver.bad_signatures
