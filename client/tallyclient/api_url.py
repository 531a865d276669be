"""The Reporting API's base URL as the CLI takes it, and its failures in plain words.

The CLI takes a value like ``http://127.0.0.1:8779`` and adds ``/v1/...`` itself.
The server's commands (``tally-sync``, the collector) hold the same rule in
``tally_common.api_url``: the client installs alone, so it keeps its own, and
tests/unit/tallyclient/test_shared_rules.py checks that the two give the same answers.
Without this check a value without a scheme fails inside requests ("No connection
adapters were found"), and one ending in ``/v1`` reaches Flask's generic 404.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import requests

EXAMPLE = "http://127.0.0.1:8779"
_VERSION_SUFFIX = re.compile(r"/(v1|internal)(/.*)?$")


class ApiUrlError(ValueError):
    """A base URL that cannot be right; the message says what a correct one looks like."""


def check_base_url(where: str, url: str | None) -> str:
    """``url`` without its trailing slash, or ApiUrlError naming ``where`` (the option)."""
    text = (url or "").strip()
    if not text:
        raise ApiUrlError(f"{where} is not set: give the Reporting API's base URL, e.g. {EXAMPLE}")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https"):
        raise ApiUrlError(f"{where} {text!r} has no http:// or https:// scheme: write it as "
                          f"e.g. {EXAMPLE}")
    if not parts.hostname:
        raise ApiUrlError(f"{where} {text!r} names no host: e.g. {EXAMPLE}")
    try:
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise ApiUrlError(f"{where} {text!r} has a malformed port: e.g. {EXAMPLE}") from None
    path = parts.path.rstrip("/")
    suffix = _VERSION_SUFFIX.search(path)
    if suffix:
        base = f"{parts.scheme}://{parts.netloc}{path[:suffix.start()]}"
        raise ApiUrlError(f"{where} {text!r} must be the API's base URL, without /v1 or "
                          f"/internal (Tally adds them): e.g. {base}")
    if parts.query or parts.fragment:
        raise ApiUrlError(f"{where} {text!r} must not carry a query or fragment: e.g. {EXAMPLE}")
    return text.rstrip("/")


def describe_request_error(exc: requests.RequestException, base_url: str,
                           service: str = "the Reporting API") -> str:
    """One line for a request that got no answer: refused, unknown host, timeout, TLS
    (``service``: what should have answered, for the hint of a refused connection)."""
    parts = urlsplit(base_url)
    # host:port only: a URL's user:password@ must not reach a log line
    address = parts.netloc.rpartition("@")[2] or base_url
    text = " ".join(str(exc).split())
    if isinstance(exc, requests.Timeout):
        return f"{address} did not answer in time"
    if "NameResolutionError" in text or "Name or service not known" in text or \
            "nodename nor servname" in text or "Temporary failure in name resolution" in text:
        return f"unknown host {parts.hostname!r} (check the URL's host name or DNS)"
    if "Connection refused" in text:
        return f"connection refused by {address} (is {service} running there?)"
    if isinstance(exc, requests.exceptions.SSLError):
        return f"TLS handshake with {address} failed"
    # urllib3 repeats its own text inside requests' message: keep the innermost reason.
    inner = text.rsplit("Caused by ", 1)[-1].rsplit(": ", 1)[-1].rstrip(")'\"")
    return f"{address}: {inner or type(exc).__name__}"
