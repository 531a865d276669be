"""At start the collector asks the API whether its ``[collector] cloud`` is a cloud the
API knows, and says so loudly (log + metric) when it is not: a typo books every
resource twice, once per name."""

from __future__ import annotations

import logging
import threading

import pytest
import requests
import requests_mock

from collector.cloud_check import CloudCheck
from collector.metrics import CollectorMetrics
from tests.unit.collector.conftest import sample_value

URL = "http://reporting.test:8779/v1/clouds"


def known(metrics: CollectorMetrics) -> float | None:
    return metrics.registry.get_sample_value("tally_collector_cloud_known", {"cloud": "os-unit"})


def check(metrics: CollectorMetrics) -> CloudCheck:
    return CloudCheck("http://reporting.test:8779", "tok", "os-unit", metrics, timeout=1.0,
                      retry_s=0.01)


def test_a_cloud_the_clouds_file_does_not_name_is_reported(
    metrics: CollectorMetrics, caplog: pytest.LogCaptureFixture
) -> None:
    with requests_mock.Mocker() as mock:
        mock.get(URL, json={"clouds_file": True, "items": [
            {"cloud": "os-prod", "in_history": True, "in_clouds_file": True, "resources": 3}]})
        with caplog.at_level(logging.ERROR):
            assert check(metrics).once() is False
        assert mock.last_request.headers["Authorization"] == "Bearer tok"
    assert known(metrics) == 0
    assert "os-unit" in caplog.text and "os-prod" in caplog.text


def test_a_named_cloud_is_known(metrics: CollectorMetrics) -> None:
    with requests_mock.Mocker() as mock:
        mock.get(URL, json={"clouds_file": True, "items": [
            {"cloud": "os-unit", "in_history": False, "in_clouds_file": True, "resources": 0}]})
        assert check(metrics).once() is True
    assert known(metrics) == 1


def test_without_a_clouds_file_a_new_name_beside_others_is_warned(
    metrics: CollectorMetrics, caplog: pytest.LogCaptureFixture
) -> None:
    with requests_mock.Mocker() as mock:
        mock.get(URL, json={"clouds_file": False, "items": [
            {"cloud": "os-prod", "in_history": True, "in_clouds_file": None, "resources": 3}]})
        with caplog.at_level(logging.WARNING):
            assert check(metrics).once() is True
    assert known(metrics) == 1
    assert "os-prod" in caplog.text


def test_an_unreachable_api_is_asked_again(metrics: CollectorMetrics) -> None:
    with requests_mock.Mocker() as mock:
        mock.get(URL, [{"status_code": 503}, {"exc": requests.ConnectionError("down")},
                       {"json": {"clouds_file": True, "items": []}}])
        check(metrics).run(threading.Event())
        assert mock.call_count == 3
    assert known(metrics) == 0
    assert sample_value(metrics, "tally_collector_cloud_check_failures_total") == 2
