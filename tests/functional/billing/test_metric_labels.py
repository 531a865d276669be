"""Any reader may ask for a statement of any cloud name; only clouds with facts become
``cloud`` label values of ``tally_statements_computed`` (every value is a series for
ever in every worker)."""

from __future__ import annotations

import uuid

from flask.testing import FlaskClient
from prometheus_client import REGISTRY
from sqlalchemy.orm import Session, sessionmaker

from tests.functional.billing.history import october, seed
from tests.functional.reporting.fixtures import auth


def _computed(cloud: str, kind: str) -> float:
    value = REGISTRY.get_sample_value("tally_statements_computed_total",
                                      {"cloud": cloud, "kind": kind})
    return value or 0.0


def test_a_cloud_without_facts_is_no_label_value(
        client: FlaskClient, session_factory: sessionmaker[Session]) -> None:
    seed(session_factory, october())
    junk = f"junk-{uuid.uuid4().hex}"
    unlabelled = (_computed("", "project"), _computed("", "summary"))
    # A cloud nothing observed has no billable month (409 before_history) and computes
    # nothing; an observed cloud's statement without facts counts under cloud="".
    for url in (f"/v1/statements?cloud={junk}&period=2026-10&project_id=p1",
                f"/v1/statements?cloud={junk}&period=2026-10"):
        assert client.get(url, headers=auth("admin")).status_code == 409
    assert _computed(junk, "project") == _computed(junk, "summary") == 0
    assert client.get("/v1/statements?cloud=c1&period=2026-10&project_id=nobody",
                      headers=auth("admin")).status_code == 200
    assert _computed("", "project") == unlabelled[0] + 1
    # A cloud with facts keeps its own label.
    before = _computed("c1", "project")
    assert client.get("/v1/statements?cloud=c1&period=2026-10&project_id=p1",
                      headers=auth("admin")).status_code == 200
    assert _computed("c1", "project") == before + 1
