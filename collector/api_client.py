"""The Reporting API as the collector's senders see it: its URL and token, one POST,
and what an answer other than 200 means.

Shared by the delivery (``POST /v1/events``, ``collector.sender``) and the filing of
parked items (``POST /v1/rejected-events``, ``collector.forward``), so both name a
failure the same way: a ``DeliveryRefused`` whose ``reason`` is a metric label and
whose text is one line an operator reads.
"""

from __future__ import annotations

import requests
from oslo_config import cfg

from collector.errors import ConfigurationError
from tally_common.api_url import ApiUrlError, check_base_url
from tally_common.service_auth import (
    ApiClient,
    ApiNoAnswer,
    BearerClient,
    ServiceAuthError,
    ServiceSettings,
    api_client,
)
from tally_common.token_file import TokenFileError, read_token_file

EVENTS_PATH = "/v1/events"
REJECTED_PATH = "/v1/rejected-events"
CLOUDS_PATH = "/v1/clouds"
SETTINGS = ServiceSettings("collector", "reporting_url", "token_file")


class DeliveryRefused(Exception):
    """A request that must be retried later (the reason is a metric label)."""

    def __init__(self, reason: str, detail: str, retry_after: float | None = None) -> None:
        super().__init__(detail)
        self.reason = reason
        self.retry_after = retry_after


def api_url(reporting_url: str, path: str) -> str:
    """``path`` of the Reporting API at ``[collector] reporting_url``."""
    try:
        return check_base_url("[collector] reporting_url", reporting_url) + path
    except ApiUrlError as exc:
        raise ConfigurationError(str(exc)) from None


def events_url(reporting_url: str) -> str:
    return api_url(reporting_url, EVENTS_PATH)


def client_from_conf(conf: cfg.ConfigOpts) -> ApiClient:
    """The one client of the Reporting API every sender shares (``tally_common.service_auth``:
    keystone's session, the token file or nothing), checked now."""
    try:
        return api_client(conf, SETTINGS, conf.collector.reporting_url)
    except ServiceAuthError as exc:
        raise ConfigurationError(str(exc)) from None


def endpoint(client: ApiClient | None, url: str, token: str | None,
             path: str) -> tuple[ApiClient, str]:
    """The client and path a sender uses: ``client`` and the API's ``path``, or (built
    from a full URL and token, as tests do) a bearer client of ``url`` itself."""
    if client is not None:
        return client, path
    return BearerClient(url, token), ""


def read_token(path: str | None) -> str | None:
    """The token file's first line: the one rule of every Tally token file."""
    if not path:
        return None
    try:
        return read_token_file(path)
    except TokenFileError as exc:
        raise ConfigurationError(f"[collector] token_file {exc}") from None


JSON_BODY = {"Content-Type": "application/json"}


def post(client: ApiClient, path: str, body: bytes, timeout: float) -> requests.Response:
    """POST ``body`` (JSON); a request that got no answer is a DeliveryRefused (also
    when keystone did not let the service log in: retried like any other)."""
    try:
        return client.request("POST", path, data=body, headers=JSON_BODY, timeout=timeout)
    except ApiNoAnswer as exc:
        raise DeliveryRefused(exc.reason, str(exc)) from None


def _error_code(response: requests.Response) -> str:
    try:
        return str(response.json()["error"]["code"])
    except Exception:
        return ""


def error_summary(response: requests.Response) -> str:
    """The API's error code and message (clipped), for a reason an operator reads."""
    try:
        error = response.json()["error"]
        summary = f"{error['code']}: {error['message']}"
    except Exception:
        return ""
    return summary if len(summary) <= 300 else summary[:297] + "..."


def refusal(response: requests.Response) -> DeliveryRefused:
    """The retry-later failure a non-200 answer is (its reason a metric label)."""
    status = response.status_code
    detail = f"HTTP {status} {_error_code(response)}".strip()
    if status == 429:
        return DeliveryRefused("throttled", detail, _retry_after(response))
    if status >= 500:
        return DeliveryRefused("server_error", detail, _retry_after(response))
    if status in (401, 403):
        return DeliveryRefused("unauthorized", detail)
    return DeliveryRefused("client_error", detail)


def _retry_after(response: requests.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
