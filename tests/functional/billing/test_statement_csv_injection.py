"""Statement CSV: text cells that a spreadsheet would run as a formula are written
after an apostrophe; numbers, negative ones included, stay numbers (SQLite and
PostgreSQL)."""

from __future__ import annotations

import csv
import io
from urllib.parse import quote

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import ACCEPT, PRICES, SMALL, event, seed
from tests.functional.reporting.fixtures import auth

ADMIN, READ = auth("admin"), auth("read")
CSV = {**READ, "Accept": "text/csv"}
RID = '=HYPERLINK("https:\\evil.example","click")'
PROJECT = "-2+3"


def _rows(client: FlaskClient, query: str) -> list[dict[str, str]]:
    response = client.get(f"/v1/statements?{query}", headers=CSV)
    assert response.status_code == 200, response.get_data(as_text=True)
    return list(csv.DictReader(io.StringIO(response.get_data(as_text=True))))


def test_formula_text_is_neutralised_and_numbers_stay_numbers(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    assert client.put("/v1/price-lists/default", json=PRICES[0], headers=ADMIN).status_code == 201
    created = event("compute.instance.create.end", RID, "2026-10-02T00:00:00Z",
                    state="active", size={**SMALL, "flavor": "@flavor"}, project_id=PROJECT)
    created["event_id"] = "+ev-1"
    seed(session_factory, [created, event("compute.instance.delete.end", RID,
                                          "2026-10-03T00:00:00Z", project_id="")])
    october = _rows(client, f"cloud=c1&period=2026-10&project_id={quote(PROJECT)}")
    (line,) = [r for r in october if r["record"] == "line"]
    assert line["resource_id"] == "'" + RID and line["event_id"] == "'+ev-1"
    assert line["size"].startswith('{"disk_gb":20,"flavor":"@flavor"')  # JSON: not a formula
    assert (line["quantity"], line["amount"]) == ("24", "0.53")  # by_resources: 0.022 an hour
    assert {r["record"]: r["value"] for r in october}["project_id"] == "'" + PROJECT
    assert client.post("/v1/periods/c1/2026-10/close", headers=ADMIN, json=ACCEPT).status_code == 200

    # a late power-off: October billed 24 h active (0.528: 0.53), the truth is 12 h
    # active and 12 h shut off at half rate (0.264: 0.26 + 0.132: 0.13), so November
    # carries a credit of 0.14
    seed(session_factory, [event("compute.instance.power_off.end", RID, "2026-10-02T12:00:00Z",
                                 state="shutoff", project_id=PROJECT)])
    november = _rows(client, f"cloud=c1&period=2026-11&project_id={quote(PROJECT)}")
    (adjustment,) = [r for r in november if r["record"] == "adjustment"]
    assert (adjustment["resource_id"], adjustment["amount"]) == ("'" + RID, "-0.14")
    values = {r["record"]: r["value"] for r in november}
    assert (values["adjustments_total"], values["total"]) == ("-0.14", "-0.14")
    summaries = _rows(client, "cloud=c1&period=2026-11")
    assert [(r["project_id"], r["total"]) for r in summaries] == [("'" + PROJECT, "-0.14")]


def test_a_leading_apostrophe_is_doubled_so_every_value_reads_back() -> None:
    from reporting.api.statements import neutralised

    for value in ("=1+1", "+1", "-1", "@x", "\tx", "\rx", "'x", "x", "", "1-2"):
        written = neutralised(value, numeric=False)
        assert (written[1:] if written.startswith("'") else written) == value
    assert neutralised("-1.50", numeric=True) == "-1.50"
    assert neutralised("-1.50", numeric=False) == "'-1.50"
    assert neutralised("=1", numeric=True) == "'=1"  # a numeric column holds only numbers
