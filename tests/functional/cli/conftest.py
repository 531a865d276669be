"""A real Reporting API (``create_app`` under werkzeug, SQLite) for the CLI tests.

The CLI talks HTTP only, so the server is a real one on a free loopback port, served
from a thread; the tokens and the configuration come from the reporting fixtures.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from sqlalchemy.orm import Session, sessionmaker
from werkzeug.serving import make_server

from reporting.app import create_app
from reporting.db.session import ENGINE_KEY, SESSIONMAKER_KEY
from tests.conftest import migrated_database_url
from tests.functional.reporting.fixtures import (  # noqa: F401 (fixtures)
    ConfFactory,
    auth,
    make_conf,
    tokens_file,
)


class Api:
    """The running API: its URL, the app's sessionmaker, and a raw POST for arranging."""

    def __init__(self, url: str, sessions: sessionmaker[Session]) -> None:
        self.url = url
        self.sessions = sessions

    def ingest(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        response = requests.post(f"{self.url}/v1/events", json={"events": events},
                                 headers=auth("ingest"), timeout=30)
        response.raise_for_status()
        body: dict[str, Any] = response.json()
        return body

    def put_schema(self, resource_type: str, schema: dict[str, Any]) -> None:
        response = requests.put(f"{self.url}/v1/resource-types/openstack/{resource_type}",
                                json={"size_schema": schema}, headers=auth("admin"),
                                timeout=30)
        response.raise_for_status()


@pytest.fixture
def api(make_conf: ConfFactory, tmp_path: Path,  # noqa: F811
        request: pytest.FixtureRequest) -> Iterator[Api]:
    url = migrated_database_url("sqlite", request, tmp_path)
    app = create_app(make_conf(url))
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Api(f"http://127.0.0.1:{server.server_port}", app.extensions[SESSIONMAKER_KEY])
    finally:
        server.shutdown()
        thread.join()
        app.extensions[ENGINE_KEY].dispose()
