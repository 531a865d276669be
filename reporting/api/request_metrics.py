"""The outermost WSGI layers of the Reporting API: request metrics
(``tally_http_request_duration_seconds``) and a last-resort JSON 500.

They wrap everything, keystonemiddleware included, so a request the middleware
answers (a 503 while keystone is down) is counted, and an exception raised outside
the Flask views (a middleware's bug) is a JSON error rather than the WSGI server's
HTML page.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from werkzeug.exceptions import HTTPException
from werkzeug.routing import Map, RequestRedirect
from werkzeug.wsgi import ClosingIterator

from reporting import metrics

LOG = logging.getLogger(__name__)

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "(unmatched)"
REDIRECTED = "(redirect)"
_LAST_RESORT = json.dumps({"error": {"code": "internal_error",
                                     "message": "internal error"}}).encode()


def route_of(url_map: Map, environ: dict[str, Any]) -> str:
    """The URL rule serving this request: a bounded label, whatever the path."""
    try:
        rule, _args = url_map.bind_to_environ(environ).match(return_rule=True)
    except RequestRedirect:
        return REDIRECTED
    except HTTPException:  # no rule, or not this method
        return UNMATCHED
    return str(rule.rule)


def _status_label(status_line: str) -> str:
    code = status_line[:3]
    return code if code.isdigit() else "other"


def guarded(app: WsgiApp) -> WsgiApp:
    """``app`` answering a JSON 500 (and logging the traceback) when it raises."""

    def guard(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        started: list[bool] = []

        def starting(*args: Any) -> Any:
            started.append(True)
            return start_response(*args)

        try:
            return app(environ, starting)
        except Exception:
            LOG.exception("unhandled error outside the views")
            # exc_info only when headers were set already (PEP 3333: the server then
            # replaces them, or re-raises if they went out).
            start_response("500 INTERNAL SERVER ERROR",
                           [("Content-Type", "application/json"),
                            ("Content-Length", str(len(_LAST_RESORT)))],
                           sys.exc_info() if started else None)
            return [_LAST_RESORT]

    return guard


def measured(app: WsgiApp, url_map: Map) -> WsgiApp:
    """``app`` observing every request in ``tally_http_request_duration_seconds``, from
    its arrival to the close of its answer."""

    def measure(environ: dict[str, Any], start_response: Callable[..., Any]
                ) -> Iterable[bytes]:
        started = time.monotonic()
        method = str(environ.get("REQUEST_METHOD", ""))
        labels = {"route": route_of(url_map, environ),
                  "method": method if method in METHODS else "other", "status": "500"}

        def recording(status_line: str, headers: list[tuple[str, str]],
                      exc_info: Any = None) -> Any:
            labels["status"] = _status_label(status_line)
            return start_response(status_line, headers, exc_info)

        def observe() -> None:
            metrics.HTTP_REQUESTS.labels(**labels).observe(time.monotonic() - started)

        try:
            body = app(environ, recording)
        except BaseException:
            observe()
            raise
        return ClosingIterator(body, observe)

    return measure
