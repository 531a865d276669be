"""JSON errors: ``{"error": {"code", "message"}}``, never a stack trace (docs/reporting-api.md)."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit

from flask import Flask, Response, g, jsonify, request
from sqlalchemy import exc as sa_exc
from werkzeug.exceptions import HTTPException
from werkzeug.routing import RequestRedirect

LOG = logging.getLogger(__name__)


class ApiError(Exception):
    """An error the API answers with a status, a stable code and a message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def error_response(status: int, code: str, message: str) -> tuple[Response, int]:
    return jsonify({"error": {"code": code, "message": message}}), status


def database_reason(exc: BaseException) -> str:
    """The driver's first line (e.g. "connection to server at ... failed: Connection
    refused"): what the operator needs, without the statement or its parameters."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def relative_location(url: str) -> str:
    """The path and query of ``url``: a Location that names no host, so it never
    echoes the client's Host header (and never ``//host``, which names one)."""
    parts = urlsplit(url)
    location = "/" + parts.path.lstrip("/")
    return f"{location}?{parts.query}" if parts.query else location


def init_app(app: Flask) -> None:
    @app.before_request
    def _redirect() -> tuple[Response, int] | None:
        # Werkzeug answers a URL with repeated slashes (/v1//resources) with a 308 to
        # the merged one, built from the request's Host header, in HTML: the same 308
        # here, with a relative Location and a JSON body.
        exc = request.routing_exception
        if not isinstance(exc, RequestRedirect):
            return None
        location = relative_location(exc.new_url)
        response, status = error_response(exc.code, "permanent_redirect",
                                          f"this resource is at {location}")
        response.headers["Location"] = location
        return response, status

    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> tuple[Response, int]:
        return error_response(exc.status, exc.code, exc.message)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        status = exc.code or 500
        code = (exc.name or "error").lower().replace(" ", "_")
        response, status = error_response(status, code,
                                          exc.description or exc.name or "error")
        # What the exception adds for the client (Allow on a 405), not its HTML type.
        for name, value in exc.get_headers():
            if name.lower() != "content-type":
                response.headers[name] = value
        return response, status

    @app.errorhandler(sa_exc.OperationalError)
    @app.errorhandler(sa_exc.TimeoutError)
    def _database_unavailable(exc: Exception) -> tuple[Response, int]:
        # The database refused or dropped the connection (or the pool ran dry): a
        # condition to retry, not a bug; the collector backs off on 503.  Flask calls
        # this handler inside its except block, where oslo.log would add the exception
        # to the line a second time: the line is logged once the response is made.
        g.database_unavailable = f"{type(exc).__name__}: {database_reason(exc)}"
        return error_response(503, "database_unavailable", "the database is unavailable")

    @app.after_request
    def _log_database_unavailable(response: Response) -> Response:
        reason = g.pop("database_unavailable", None)
        if reason is not None:
            LOG.error("database unavailable: %s", reason)
        return response

    @app.errorhandler(Exception)
    def _unexpected(exc: Exception) -> tuple[Response, int]:
        # Logged with its traceback for the operator; the client gets no detail.
        LOG.exception("unhandled error in request")
        return error_response(500, "internal_error", "internal error")
