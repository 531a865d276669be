"""The set-up and reads the tests of an account's dated terms (minimum commitments,
discounts) share: two accounts over the October history of ``history``, and the
account statement read as JSON totals or CSV total rows."""

from __future__ import annotations

import csv
import io
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import PRICES, october, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")
OCT, NOV = "2026-10", "2026-11"
OCT_START, NOV_START = "2026-10-01T00:00:00Z", "2026-11-01T00:00:00Z"


def two_accounts(client: FlaskClient, factory: sessionmaker[Session]) -> None:
    """acme's October is 0.82 of usage (p1's first 5 h, 0.10; p2's day, 0.72), its
    November 0.00 (p2 still in it); beta's October 1.80."""
    for document in PRICES:
        assert client.put("/v1/price-lists/default", json=document, headers=ADMIN
                          ).status_code == 201
    seed(factory, october())
    for name in ("acme", "beta"):
        assert client.post("/v1/accounts", headers=ADMIN,
                           json={"account_id": name}).status_code == 201
    for account, project, at in (("acme", "p1", "2026-09-01T00:00:00Z"),
                                 ("acme", "p2", OCT_START),
                                 ("beta", "p1", "2026-10-02T05:00:00Z")):
        assert client.post(f"/v1/accounts/{account}/memberships", headers=ADMIN, json={
            "cloud": "c1", "project_id": project, "effective_from": at}).status_code == 201


def statement(client: FlaskClient, period: str = OCT, account: str = "acme",
              **headers: str) -> Any:
    response = client.get(f"/v1/accounts/{account}/statement?period={period}",
                          headers={**READ, **headers})
    assert response.status_code == 200, response.get_data(as_text=True)
    return response


def totals(client: FlaskClient, period: str = OCT, account: str = "acme"
           ) -> list[dict[str, Any]]:
    return statement(client, period, account).get_json()["totals"]  # type: ignore[no-any-return]


def csv_totals(client: FlaskClient, period: str = OCT) -> list[tuple[str, str, str]]:
    rows = csv.DictReader(io.StringIO(
        statement(client, period, Accept="text/csv").get_data(as_text=True)))
    return [(r["record"], r["currency"], r["value"]) for r in rows
            if r["record"].startswith("account_") and r["record"] != "account_id"]
