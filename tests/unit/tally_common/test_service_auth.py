"""How tally-collector and tally-sync log in (tally_common.service_auth): a keystoneauth
session from [service_credentials] sends X-Auth-Token, finds the API in the catalog,
renews the token before it expires and after a 401; a configuration that can never
log in is refused with its reason."""

from __future__ import annotations

import datetime as dt
import itertools
from pathlib import Path
from typing import Any

import pytest
import requests
import requests_mock as rm
from oslo_config import cfg

from tally_common import service_auth
from tally_common.service_auth import (
    ApiNoAnswer,
    BearerClient,
    KeystoneClient,
    ServiceAuthError,
    ServiceSettings,
    api_client,
)

AUTH_URL = "http://keystone.test/v3"
API = "http://tally.test:8779"
SETTINGS = ServiceSettings("svc", "api_url", "token_file")


def _conf(**credentials: str) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    service_auth.register_opts(conf)
    conf.register_opts([cfg.StrOpt("api_url"), cfg.StrOpt("token_file"),
                        service_auth.strategy_opt("[svc] api_url", "[svc] token_file")],
                       group="svc")
    conf([], project="tally-unit-test", default_config_files=[])
    if credentials:
        conf.set_override("auth_type", credentials.pop("auth_type", "v3password"),
                          group=service_auth.GROUP)
        service_auth.register_plugin_opts(conf)
        for name, value in credentials.items():
            conf.set_override(name, value, group=service_auth.GROUP)
    return conf


def _service_user(conf: cfg.ConfigOpts) -> cfg.ConfigOpts:
    for name, value in {"auth_url": AUTH_URL, "username": "tally", "password": "pw",
                        "project_name": "service", "user_domain_name": "Default",
                        "project_domain_name": "Default"}.items():
        conf.set_override(name, value, group=service_auth.GROUP)
    return conf


class Keystone:
    """POST /v3/auth/tokens: a new token each time, expiring ``lifetime`` from now,
    with the Reporting API in its catalog."""

    def __init__(self, lifetime: dt.timedelta = dt.timedelta(hours=1)) -> None:
        self.lifetime = lifetime
        self.issued: list[str] = []
        self._numbers = itertools.count(1)

    def __call__(self, request: Any, context: Any) -> dict[str, Any]:
        token = f"tok-{next(self._numbers)}"
        self.issued.append(token)
        context.status_code = 201
        context.headers["X-Subject-Token"] = token
        expires = dt.datetime.now(dt.UTC) + self.lifetime
        return {"token": {
            "methods": ["password"], "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "user": {"id": "u1", "name": "tally", "domain": {"id": "default"}},
            "project": {"id": "p1", "name": "service", "domain": {"id": "default"}},
            "roles": [{"id": "r1", "name": "tally_ingest"}],
            "catalog": [{"type": "usage-history", "name": "tally", "id": "s1", "endpoints": [
                {"id": "e1", "interface": "public", "region": "RegionOne",
                 "region_id": "RegionOne", "url": API},
                {"id": "e2", "interface": "internal", "region": "RegionOne",
                 "region_id": "RegionOne", "url": "http://tally-internal.test:8779"},
            ]}],
        }}


@pytest.fixture
def keystone(requests_mock: rm.Mocker) -> Keystone:
    fake = Keystone()
    requests_mock.post(f"{AUTH_URL}/auth/tokens", json=fake)
    return fake


def test_the_token_goes_as_x_auth_token_to_the_catalog_endpoint(
    keystone: Keystone, requests_mock: rm.Mocker
) -> None:
    requests_mock.get(f"{API}/v1/clouds", json={"items": []})
    client = api_client(_service_user(_conf(auth_type="v3password")), SETTINGS, None)
    assert isinstance(client, KeystoneClient)
    assert client.request("GET", "/v1/clouds", timeout=5).status_code == 200
    sent = requests_mock.last_request.headers
    assert sent["X-Auth-Token"] == "tok-1" and "Authorization" not in sent
    assert "usage-history" in client.describe()


def test_the_interface_and_an_operator_url_choose_the_endpoint(
    keystone: Keystone, requests_mock: rm.Mocker
) -> None:
    requests_mock.get("http://tally-internal.test:8779/v1/clouds", json={"items": []})
    requests_mock.get("http://override.test:1/v1/clouds", json={"items": []})
    conf = _service_user(_conf(auth_type="v3password"))
    conf.set_override("interface", "internal", group=service_auth.GROUP)
    api_client(conf, SETTINGS, None).request("GET", "/v1/clouds", timeout=5)
    assert requests_mock.last_request.url.startswith("http://tally-internal.test:8779/")
    api_client(conf, SETTINGS, "http://override.test:1", url_is_set=True).request(
        "GET", "/v1/clouds", timeout=5)
    assert requests_mock.last_request.url.startswith("http://override.test:1/")


def test_a_401_logs_in_again_and_resends_once(keystone: Keystone,
                                              requests_mock: rm.Mocker) -> None:
    requests_mock.post(f"{API}/v1/events", [{"status_code": 401, "json": {}},
                                            {"status_code": 200, "json": {"results": []}}])
    client = api_client(_service_user(_conf(auth_type="v3password")), SETTINGS, None)
    response = client.request("POST", "/v1/events", data=b"{}", timeout=5)
    assert response.status_code == 200
    assert keystone.issued == ["tok-1", "tok-2"]
    assert requests_mock.last_request.headers["X-Auth-Token"] == "tok-2"


def test_a_token_about_to_expire_is_renewed_before_it_is_sent(
    requests_mock: rm.Mocker
) -> None:
    keystone = Keystone(lifetime=dt.timedelta(seconds=60))  # within keystoneauth's margin
    requests_mock.post(f"{AUTH_URL}/auth/tokens", json=keystone)
    requests_mock.get(f"{API}/v1/clouds", json={"items": []})
    client = api_client(_service_user(_conf(auth_type="v3password")), SETTINGS, None)
    client.request("GET", "/v1/clouds", timeout=5)
    first = requests_mock.last_request.headers["X-Auth-Token"]
    client.request("GET", "/v1/clouds", timeout=5)
    second = requests_mock.last_request.headers["X-Auth-Token"]
    assert first in keystone.issued and second in keystone.issued and first != second


def test_threads_share_one_token(keystone: Keystone, requests_mock: rm.Mocker) -> None:
    import threading

    requests_mock.get(f"{API}/v1/clouds", json={"items": []})
    client = api_client(_service_user(_conf(auth_type="v3password")), SETTINGS, None)
    client.request("GET", "/v1/clouds", timeout=5)
    other = threading.Thread(target=client.request, args=("GET", "/v1/clouds"),
                             kwargs={"timeout": 5})
    other.start()
    other.join()
    assert keystone.issued == ["tok-1"] and requests_mock.call_count == 3


def test_keystone_unreachable_is_one_line_naming_keystone(requests_mock: rm.Mocker) -> None:
    requests_mock.post(f"{AUTH_URL}/auth/tokens", exc=requests.ConnectionError(
        "HTTPConnectionPool(host='keystone.test', port=80): Max retries exceeded "
        "(Caused by NewConnectionError(': Failed to establish a new connection: "
        "[Errno 111] Connection refused'))"))
    client = api_client(_service_user(_conf(auth_type="v3password")), SETTINGS, None)
    with pytest.raises(ApiNoAnswer) as caught:
        client.request("GET", "/v1/clouds", timeout=5)
    assert caught.value.reason == "connection"
    assert str(caught.value) == ("connection refused by keystone.test "
                                 "(is keystone running there?)")


def test_refused_credentials_and_a_missing_endpoint_say_so(requests_mock: rm.Mocker) -> None:
    requests_mock.post(f"{AUTH_URL}/auth/tokens", status_code=401, json={"error": {
        "code": 401, "message": "The request you have made requires authentication.",
        "title": "Unauthorized"}})
    client = api_client(_service_user(_conf(auth_type="v3password")), SETTINGS, None)
    with pytest.raises(ApiNoAnswer, match="refused the \\[service_credentials\\] login: "
                                          "HTTP 401") as caught:
        client.request("GET", "/v1/clouds", timeout=5)
    assert caught.value.reason == "unauthorized"
    keystone = Keystone()
    requests_mock.post(f"{AUTH_URL}/auth/tokens", json=keystone)
    conf = _service_user(_conf(auth_type="v3password"))
    conf.set_override("region_name", "Elsewhere", group=service_auth.GROUP)
    with pytest.raises(ApiNoAnswer, match="catalog has no usage-history endpoint "
                                          "\\(interface public, region Elsewhere\\)"):
        api_client(conf, SETTINGS, None).request("GET", "/v1/clouds", timeout=5)


def test_a_configuration_that_cannot_log_in_is_refused(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("abc\n")
    with pytest.raises(ServiceAuthError, match="no credentials for the Reporting API"):
        api_client(_conf(), SETTINGS, API, url_is_set=True)
    both = _service_user(_conf(auth_type="v3password"))
    both.set_override("token_file", str(token), group="svc")
    with pytest.raises(ServiceAuthError, match="both .* are set"):
        api_client(both, SETTINGS, API, url_is_set=True)
    noauth = _conf()
    noauth.set_override("token_file", str(token), group="svc")
    noauth.set_override("auth_strategy", "noauth", group="svc")
    with pytest.raises(ServiceAuthError, match="noauth sends no credentials"):
        api_client(noauth, SETTINGS, API, url_is_set=True)
    keystone = _conf()
    keystone.set_override("auth_strategy", "keystone", group="svc")
    with pytest.raises(ServiceAuthError, match="needs \\[service_credentials\\] auth_type"):
        api_client(keystone, SETTINGS, API, url_is_set=True)
    missing = _conf(auth_type="v3password")
    with pytest.raises(ServiceAuthError, match="\\[service_credentials\\].*not given: auth_url"):
        api_client(missing, SETTINGS, None)
    with pytest.raises(ServiceAuthError, match="not a keystoneauth1 plugin"):
        _conf(auth_type="pasword")
    without_url = _conf()
    without_url.set_override("token_file", str(token), group="svc")
    with pytest.raises(ServiceAuthError, match="\\[svc\\] api_url is not set"):
        api_client(without_url, SETTINGS, None)


def test_the_token_strategy_sends_the_bearer_token(tmp_path: Path,
                                                   requests_mock: rm.Mocker) -> None:
    token = tmp_path / "token"
    token.write_text("abc\n")
    conf = _conf()
    conf.set_override("token_file", str(token), group="svc")
    client = api_client(conf, SETTINGS, API, url_is_set=True)
    assert isinstance(client, BearerClient)
    requests_mock.get(f"{API}/v1/clouds", json={})
    client.request("GET", "/v1/clouds", timeout=5)
    assert requests_mock.last_request.headers["Authorization"] == "Bearer abc"
