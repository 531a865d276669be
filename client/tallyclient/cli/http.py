"""The Reporting API as the CLI sees it: JSON over HTTP, errors as exceptions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import requests

from tallyclient.api_url import describe_request_error

# The API refuses a page larger than this.
MAX_PAGE = 1000


class ApiError(Exception):
    """The API answered an error: ``status``, its ``code`` and ``message``."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class Unreachable(Exception):
    """No usable answer: refused, timed out, not HTTP, not the Reporting API's JSON."""


Params = Mapping[str, str | None]


class ApiClient:
    """One base URL, one optional bearer or keystone token, one timeout for every request."""

    def __init__(self, base_url: str, token: str | None, timeout: float, *,
                 keystone_token: str | None = None) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"
        if keystone_token:
            self.session.headers["X-Auth-Token"] = keystone_token

    def get(self, path: str, params: Params | None = None) -> Any:
        return self._request("GET", path, params=params)

    def post(self, path: str, body: Any) -> Any:
        return self._request("POST", path, json=body)

    def put(self, path: str, body: Any) -> Any:
        return self._request("PUT", path, json=body)

    def get_text(self, path: str, params: Params, accept: str) -> str:
        return self.get_text_page(path, params, accept)[0]

    def get_text_page(self, path: str, params: Params, accept: str) -> tuple[str, str | None]:
        """A non-JSON answer (``accept``) and its ``X-Next-Marker`` header."""
        response = self._send("GET", path, params=params, json=None, accept=accept)
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = None
            raise _api_error(response, body)
        return response.text, response.headers.get("X-Next-Marker")

    def _send(self, method: str, path: str, *, params: Params | None, json: Any,
              accept: str | None = None) -> requests.Response:
        url = self.base_url + path
        # None means "filter not given": never send it as an empty value.
        query = {k: v for k, v in (params or {}).items() if v is not None}
        headers = {"Accept": accept} if accept else None
        try:
            return self.session.request(method, url, params=query, json=json,
                                        timeout=self.timeout, headers=headers)
        except requests.ConnectionError as exc:
            raise Unreachable(f"cannot reach the Reporting API at {self.base_url}: "
                              f"{describe_request_error(exc, self.base_url)}") from None
        except requests.Timeout:
            raise Unreachable(f"the Reporting API at {self.base_url} did not answer "
                              f"within {self.timeout:g} s") from None
        except requests.RequestException as exc:
            raise Unreachable(f"request to {url} failed: {_reason(exc)}") from None

    def _request(self, method: str, path: str, *, params: Params | None = None,
                 json: Any = None) -> Any:
        url = self.base_url + path
        response = self._send(method, path, params=params, json=json)
        try:
            body = response.json()
        except ValueError:
            body = None
        if response.status_code >= 400:
            raise _api_error(response, body)
        if body is None:
            raise Unreachable(f"{url} answered {response.status_code} without a JSON body")
        return body

    def pages(self, path: str, params: Params, limit: int | None,
              page_size: int = MAX_PAGE) -> list[Any]:
        """The items of a paginated list, following ``next_marker``; at most ``limit``."""
        items: list[Any] = []
        marker: str | None = None
        while True:
            size = page_size if limit is None else min(page_size, limit - len(items))
            body = self.get(path, {**params, "limit": str(size), "marker": marker})
            if not isinstance(body, dict) or not isinstance(body.get("items"), list):
                raise Unreachable(f"{self.base_url}{path} did not answer a list "
                                  "(is this the Reporting API?)")
            items.extend(body["items"])
            marker = body.get("next_marker")
            if not marker or (limit is not None and len(items) >= limit):
                return items


def _api_error(response: requests.Response, body: Any) -> ApiError:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        return ApiError(response.status_code, str(error.get("code", "error")),
                        str(error.get("message", "")))
    return ApiError(response.status_code, "error", response.reason or "no error body")


def _reason(exc: Exception) -> str:
    # requests buries the socket error in a long repr; name the common case plainly.
    text = " ".join(str(exc).split())
    if "Connection refused" in text:
        return "connection refused"
    return text or type(exc).__name__
