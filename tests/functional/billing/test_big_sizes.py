"""A size beyond 64 bits is rated as the integer it is, never as a float: the
lifecycle's size is read back exactly (orjson once read 10**25 + 1 as 1e+25).
SQLite and PostgreSQL."""

from __future__ import annotations

from flask.testing import FlaskClient
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import event, seed
from tests.functional.reporting.fixtures import auth

SIZE_GB = 10**25 + 1


def test_a_size_beyond_64_bits_is_rated_exactly(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    prices = {"effective_from": "2026-10-01T00:00:00Z", "currency": "EUR",
              "rates": {"image": {"per": "gb_hour", "rate": "1"}}}
    assert client.put("/v1/price-lists/default", json=prices,
                      headers=auth("admin")).status_code == 201
    seed(session_factory, [
        event("image.create.end", "img-1", "2026-10-01T00:00:00Z", resource_type="image",
              state="active", size={"size_gb": SIZE_GB}),
        event("image.delete.end", "img-1", "2026-10-01T01:00:00Z", resource_type="image",
              project_id=""),
    ])
    response = client.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                          headers=auth("read"))
    assert response.status_code == 200, response.get_data(as_text=True)
    (line,) = response.get_json()["lines"]
    # One hour of 10**25 + 1 GB at 1 per GB-hour; the float would give ...905969664.00.
    assert line["amount"] == f"{SIZE_GB}.00"
