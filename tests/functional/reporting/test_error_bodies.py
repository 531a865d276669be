"""What a client gets in the app's own redirects and errors: a relative Location (never
built from the client's Host header), JSON bodies, even for an error raised outside the
views (in a middleware)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests_mock
from flask import Flask
from flask.testing import FlaskClient

from reporting.app import create_app
from reporting.db.session import ENGINE_KEY
from tests.functional.reporting import keystone_fake
from tests.functional.reporting.fixtures import auth


@pytest.mark.parametrize("path", ["/v1//resources?limit=1", "/v1//clouds", "//v1//clouds"])
def test_repeated_slashes_redirect_relatively(client: FlaskClient, path: str) -> None:
    response = client.get(path, headers={**auth("read"), "Host": "attacker.example"})
    if path.startswith("//"):  # merge_slashes does not apply to the leading ones
        assert response.status_code == 404
        assert response.get_json()["error"]["code"] == "not_found"
        return
    assert response.status_code == 308
    location = response.headers["Location"]
    assert location == path.replace("//", "/"), location
    assert response.get_json()["error"]["code"] == "permanent_redirect"
    assert "attacker" not in response.get_data(as_text=True)


def test_a_405_is_json_with_allow(client: FlaskClient) -> None:
    response = client.delete("/healthz")
    assert response.status_code == 405
    assert response.get_json()["error"]["code"] == "method_not_allowed"
    assert "GET" in response.headers["Allow"]


@pytest.fixture
def keystone_app(tmp_path: Path, db_url: str) -> Iterator[Flask]:
    with requests_mock.Mocker() as mocker:
        keystone_fake.FakeKeystone(mocker)
        app = create_app(keystone_fake.keystone_conf(tmp_path, db_url))
        try:
            yield app
        finally:
            app.extensions[ENGINE_KEY].dispose()


def test_an_error_outside_the_views_is_a_json_500(keystone_app: Flask,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from keystonemiddleware import auth_token

    def broken(self: object, request: object) -> None:
        raise RuntimeError("a bug in the middleware")

    monkeypatch.setattr(auth_token.BaseAuthProtocol, "process_request", broken)
    response = keystone_app.test_client().get("/v1/resources",
                                              headers={"X-Auth-Token": "t"})
    assert response.status_code == 500
    assert response.get_json() == {"error": {"code": "internal_error",
                                             "message": "internal error"}}
