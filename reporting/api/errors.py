"""JSON errors: ``{"error": {"code", "message"}}``, never a stack trace (docs/reporting-api.md)."""

from __future__ import annotations

import logging

from flask import Flask, Response, g, jsonify
from sqlalchemy import exc as sa_exc
from werkzeug.exceptions import HTTPException

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


def init_app(app: Flask) -> None:
    @app.errorhandler(ApiError)
    def _api_error(exc: ApiError) -> tuple[Response, int]:
        return error_response(exc.status, exc.code, exc.message)

    @app.errorhandler(HTTPException)
    def _http_error(exc: HTTPException) -> tuple[Response, int]:
        status = exc.code or 500
        code = (exc.name or "error").lower().replace(" ", "_")
        return error_response(status, code, exc.description or exc.name or "error")

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
