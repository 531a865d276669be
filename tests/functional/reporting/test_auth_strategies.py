"""auth_strategy=token and noauth (docs/reporting-queries.md), through the HTTP surface."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from flask.testing import FlaskClient

from reporting.api.auth import AuthConfigError, Caller, load_tokens
from reporting.app import create_app
from reporting.db.session import ENGINE_KEY
from tests.functional.reporting.fixtures import ConfFactory, auth

OPEN = ["/healthz", "/readyz", "/metrics", "/v1/openapi.json"]
READ = ["/v1/resources", "/v1/resources/openstack/c1/instance/x",
        "/v1/resources/openstack/c1/instance/x/events",
        "/v1/resources/openstack/c1/instance/x/lifecycle",
        "/v1/usage?from=2026-01-01T00:00:00Z&to=2026-01-02T00:00:00Z"]


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer not-a-token"},
        {"Authorization": "Basic dG9rLXJlYWQ6"},
        {"Authorization": "tok-read"},
        {"X-Auth-Token": "tok-read"},
    ],
)
def test_token_missing_or_wrong_is_401(client: FlaskClient, headers: dict[str, str]) -> None:
    for path in READ:
        response = client.get(path, headers=headers)
        assert response.status_code == 401, path
        assert response.get_json() == {
            "error": {"code": "unauthorized", "message": "missing or invalid credentials"}
        }


def test_token_roles(client: FlaskClient) -> None:
    for path in READ:
        response = client.get(path, headers=auth("ingest"))
        assert response.status_code == 403, path
        assert response.get_json()["error"]["code"] == "forbidden"
        for role in ("read", "admin"):
            assert client.get(path, headers=auth(role)).status_code in (200, 404), path


def test_token_scheme_is_case_insensitive(client: FlaskClient) -> None:
    response = client.get("/v1/resources", headers={"Authorization": "bearer tok-read"})
    assert response.status_code == 200


def test_open_endpoints_need_no_token(client: FlaskClient) -> None:
    for path in OPEN:
        assert client.get(path).status_code == 200, path


def test_noauth_warns_at_every_start_and_grants_admin(
    make_conf: ConfFactory, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    conf = make_conf(db_url, api={"auth_strategy": "noauth"})
    for _start in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="reporting.api.auth"):
            app = create_app(conf)
        try:
            warnings = [r for r in caplog.records if r.levelno == logging.WARNING
                        and "noauth" in r.getMessage()]
            assert len(warnings) == 1
            client = app.test_client()
            assert client.get("/v1/resources").status_code == 200
            assert client.post("/v1/events", json={"events": []}).status_code == 200
        finally:
            app.extensions[ENGINE_KEY].dispose()


def test_token_strategy_without_tokens_file_refuses_to_start(
    make_conf: ConfFactory, db_url: str, tmp_path: Path
) -> None:
    with pytest.raises(AuthConfigError, match="tokens_file is required"):
        create_app(make_conf(db_url, api={"tokens_file": None}))
    bad = tmp_path / "bad.yaml"
    bad.write_text("tok: superuser\n")
    with pytest.raises(AuthConfigError, match="superuser"):
        create_app(make_conf(db_url, api={"tokens_file": str(bad)}))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tok: project_reader\n", "needs a project"),
        ("tok: {role: read, project_id: p1}\n", "exactly"),
        ("tok: {role: project_reader}\n", "exactly"),
        ("tok: {role: project_reader, project_id: ''}\n", "non-empty project id"),
        ("tok: {role: project_reader, project_id: p1, extra: 1}\n", "exactly"),
        ("tok: account_reader\n", "needs an account"),
        ("tok: {role: account_reader, project_id: p1}\n", "exactly"),
        ("tok: {role: project_reader, account_id: acme}\n", "exactly"),
        ("tok: {role: account_reader, account_id: '  '}\n", "non-empty account id"),
    ],
)
def test_project_reader_tokens_need_exactly_one_project(
    text: str, message: str, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    with pytest.raises(AuthConfigError, match=message):
        load_tokens(str(bad))


def test_project_reader_token_is_bound_to_its_project(tmp_path: Path) -> None:
    path = tmp_path / "tokens.yaml"
    path.write_text("a: read\nb: {role: project_reader, project_id: p1}\n"
                    "c: {role: account_reader, account_id: acme}\n")
    assert load_tokens(str(path)) == {"a": Caller("read"),
                                      "b": Caller("project_reader", "p1"),
                                      "c": Caller("account_reader", account_id="acme")}
