"""JSON errors of the Reporting API, including an unreachable database (503, not 500)."""

from __future__ import annotations

from oslo_config import cfg

from reporting import opts
from reporting.app import create_app


def _app(url: str):
    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    conf([], default_config_files=[])
    conf.set_override("connection", url, group="database")
    conf.set_override("auth_strategy", "noauth", group="api")
    return create_app(conf)


def test_unreachable_database_is_503_with_the_error_shape() -> None:
    # Port 9 on loopback: nothing listens, the connection is refused at once.
    app = _app("postgresql+psycopg://postgres@127.0.0.1:9/nothing?connect_timeout=2")
    response = app.test_client().get("/v1/resources")
    assert response.status_code == 503
    assert response.json == {"error": {"code": "database_unavailable",
                                       "message": "the database is unavailable"}}


def test_unknown_path_is_a_json_404() -> None:
    response = _app("sqlite://").test_client().get("/nope")
    assert response.status_code == 404
    assert response.json["error"]["code"] == "not_found"
