"""A transient error is retried before it costs a type (and the run): keystoneauth's
own retry options, read from the clouds.yaml entry as keystoneauth/openstacksdk read
them (``connect_retries``, ``status_code_retries``, ``retriable_status_codes``,
per service with the ``<service>_`` prefix)."""

from __future__ import annotations

from pathlib import Path

from tests.unit.sync.openstack.conftest import CINDER, FakeCloud, api, write_clouds_yaml
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
