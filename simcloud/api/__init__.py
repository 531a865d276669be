"""The simulated OpenStack APIs on one port, each service under its own path."""

from __future__ import annotations

from flask import Flask, Response, request

from simcloud.api import cinder, common, control, glance, keystone, neutron, nova, octavia
from simcloud.identity import Identity
from simcloud.world import World


def create_app(world: World, identity: Identity) -> Flask:
    app = Flask("simcloud")
    app.config["SIMCLOUD_WORLD"] = world
    app.config["SIMCLOUD_IDENTITY"] = identity
    common.register_common(app)
    for module in (keystone, nova, cinder, neutron, glance, octavia, control):
        app.register_blueprint(module.bp)
    guards = [(common.PREFIXES[service], module.guard) for service, module in (
        ("identity", keystone), ("compute", nova), ("block-storage", cinder),
        ("network", neutron), ("image", glance), ("load-balancer", octavia))]

    @app.before_request
    def _guard() -> Response | None:
        # keystonemiddleware sits in front of routing: an unknown path needs a token too.
        path = request.path
        for prefix, guard in guards:
            if path == prefix or path.startswith(prefix + "/"):
                return guard()
        return None

    @app.errorhandler(404)
    def not_found(_exc: Exception) -> Response:
        return common.json_response(
            {"itemNotFound": {"code": 404, "message": "The resource could not be found."}}, 404)

    @app.errorhandler(405)
    def not_allowed(_exc: Exception) -> Response:
        return common.json_response(
            {"badMethod": {"code": 405, "message": "The method is not allowed."}}, 405)

    return app
