"""The OpenAPI document is valid 3.1 and says exactly which routes exist."""

from __future__ import annotations

import re

from flask import Flask
from flask.testing import FlaskClient
from openapi_spec_validator import validate

from reporting.api.openapi import document

_RULE_PARAM = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
_IMPLICIT = {"HEAD", "OPTIONS"}


def _routes(app: Flask) -> set[tuple[str, str]]:
    routes = set()
    for rule in app.url_map.iter_rules():
        if rule.endpoint == "static":
            continue
        path = _RULE_PARAM.sub(r"{\1}", rule.rule)
        for method in (rule.methods or set()) - _IMPLICIT:
            routes.add((method.lower(), path))
    return routes


def _documented() -> set[tuple[str, str]]:
    return {
        (method, path)
        for path, item in document()["paths"].items()
        for method in item
        if method in {"get", "put", "post", "delete", "patch"}
    }


def test_document_is_valid_openapi_3_1() -> None:
    doc = document()
    assert doc["openapi"].startswith("3.1.")
    validate(doc)


def test_every_route_is_documented_and_every_documented_route_exists(app: Flask) -> None:
    routes, documented = _routes(app), _documented()
    assert routes - documented == set(), "routes missing from the OpenAPI document"
    assert documented - routes == set(), "documented operations no route serves"


def test_path_parameters_match_the_routes() -> None:
    for path, item in document()["paths"].items():
        names = set(re.findall(r"{([^}]+)}", path))
        for method, operation in item.items():
            declared = {p["name"] for p in operation.get("parameters", [])
                        if isinstance(p, dict) and p.get("in") == "path"}
            assert declared == names, f"{method} {path}"


def test_operation_ids_are_unique() -> None:
    ids = [op["operationId"] for item in document()["paths"].values() for op in item.values()]
    assert len(ids) == len(set(ids))


def test_served_without_credentials(client: FlaskClient) -> None:
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    assert response.get_json() == document()


def test_document_copies_are_independent() -> None:
    first = document()
    first["paths"].clear()
    assert document()["paths"]
