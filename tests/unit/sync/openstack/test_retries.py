"""A transient error is retried before it costs a type (and the run): keystoneauth's
own retry options, read from the clouds.yaml entry as keystoneauth/openstacksdk read
them (``connect_retries``, ``status_code_retries``, ``retriable_status_codes``,
per service with the ``<service>_`` prefix), the token request included, with the
entry's retry delays."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
import requests

from reporting.sync.observation import RunAborted
from tests.unit.sync.openstack.conftest import (
    AUTH_URL,
    CINDER,
    NEUTRON,
    FakeCloud,
    api,
    token_body,
    write_clouds_yaml,
)
from tests.unit.sync.openstack.test_adapter import ALL, observe

VOLUMES = f"{CINDER}/volumes/detail"


def volumes_answer_once(fake_cloud: FakeCloud, status: int) -> None:
    body = api("cinder_v3_volumes-list-detailed-response.json")
    fake_cloud.mock.get(VOLUMES, [{"status_code": status, "json": {}},
                                  {"status_code": 200, "json": body}])


def test_one_503_is_retried_by_default(fake_cloud: FakeCloud, clouds_env) -> None:
    volumes_answer_once(fake_cloud, 503)
    observation = observe(clouds_env)
    assert observation.errors == []
    assert observation.enumerated_types == ALL
    assert len(fake_cloud.requested("/volumes/detail")) == 2


def test_retries_follow_the_clouds_yaml_entry(tmp_path: Path, fake_cloud: FakeCloud) -> None:
    path = write_clouds_yaml(tmp_path, block_storage_status_code_retries=0)
    volumes_answer_once(fake_cloud, 503)
    observation = observe({"OS_CLIENT_CONFIG_FILE": str(path)})
    assert "volume" not in observation.enumerated_types
    assert len(fake_cloud.requested("/volumes/detail")) == 1


def test_retriable_status_codes_follow_the_clouds_yaml_entry(
    tmp_path: Path, fake_cloud: FakeCloud
) -> None:
    path = write_clouds_yaml(tmp_path, retriable_status_codes=[502, 503])
    volumes_answer_once(fake_cloud, 502)
    observation = observe({"OS_CLIENT_CONFIG_FILE": str(path)})
    assert observation.errors == []
    assert len(fake_cloud.requested("/volumes/detail")) == 2


TOKENS = f"{AUTH_URL}/auth/tokens"


def token_answers_once(fake_cloud: FakeCloud, first: dict[str, Any]) -> None:
    fake_cloud.mock.post(TOKENS, [first, {"json": token_body(), "status_code": 201,
                                          "headers": {"X-Subject-Token": "tok-admin"}}])


def test_one_503_of_the_token_request_is_retried(fake_cloud: FakeCloud, clouds_env) -> None:
    # keystone restarting must not abort the run (RunAborted) before a type is observed.
    token_answers_once(fake_cloud, {"status_code": 503, "json": {}})
    observation = observe(clouds_env)
    assert observation.errors == []
    assert observation.enumerated_types == ALL
    assert len(fake_cloud.requested("/auth/tokens")) == 2


def test_a_dropped_connection_of_the_token_request_is_retried(
    fake_cloud: FakeCloud, clouds_env
) -> None:
    token_answers_once(fake_cloud, {"exc": requests.exceptions.ConnectionError})
    assert observe(clouds_env).enumerated_types == ALL
    assert len(fake_cloud.requested("/auth/tokens")) == 2


def test_the_token_request_follows_the_identity_options(
    tmp_path: Path, fake_cloud: FakeCloud
) -> None:
    path = write_clouds_yaml(tmp_path, identity_status_code_retries=0)
    token_answers_once(fake_cloud, {"status_code": 503, "json": {}})
    with pytest.raises(RunAborted, match="authenticating against the cloud"):
        observe({"OS_CLIENT_CONFIG_FILE": str(path)})
    assert len(fake_cloud.requested("/auth/tokens")) == 1


def retry_pauses(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [re.search(r"Retrying in ([\d.]+)s", r.getMessage()).group(1)  # type: ignore[union-attr]
            for r in caplog.records if "Retrying in" in r.getMessage()]


def test_retry_delays_follow_the_clouds_yaml_entry(
    tmp_path: Path, fake_cloud: FakeCloud, caplog: pytest.LogCaptureFixture
) -> None:
    # keystoneauth logs each pause: the entry's fixed delays, not its 0.5 s, 1 s, ...
    path = write_clouds_yaml(tmp_path, status_code_retry_delay=0.2, connect_retry_delay=0.3)
    token_answers_once(fake_cloud, {"status_code": 503, "json": {}})
    volumes_answer_once(fake_cloud, 503)
    fake_cloud.mock.get(f"{NEUTRON}/v2.0/floatingips", [
        {"exc": requests.exceptions.ConnectionError},
        {"json": api("neutron_floating-ips-list-response.json")}])
    caplog.set_level(logging.WARNING, logger="keystoneauth")
    observation = observe({"OS_CLIENT_CONFIG_FILE": str(path)})
    assert observation.enumerated_types == ALL
    assert sorted(retry_pauses(caplog)) == ["0.2", "0.2", "0.3"]


def test_retry_delays_default_to_keystoneauths_backoff(
    fake_cloud: FakeCloud, clouds_env, caplog: pytest.LogCaptureFixture
) -> None:
    token_answers_once(fake_cloud, {"status_code": 503, "json": {}})
    caplog.set_level(logging.WARNING, logger="keystoneauth")
    observe(clouds_env)
    assert retry_pauses(caplog) == ["0.5"]
