"""``tally inventory --type T``: the CLI's typo check reads /v1/resource-types, which a
project reader may not read; that caller gets the API's own (empty) answer, not a 403
of a call it never asked for."""

from __future__ import annotations

import argparse

import pytest
import requests_mock as rm

from tallyclient.cli.billing import positive_line
from tallyclient.cli.main import main

URL = "http://tally.test:8779"


def test_a_reader_who_may_not_list_types_gets_the_apis_answer(
    requests_mock: rm.Mocker, capsys: pytest.CaptureFixture[str]
) -> None:
    requests_mock.get(f"{URL}/v1/resources", json={"items": [], "next": None})
    requests_mock.get(f"{URL}/v1/resource-types", status_code=403, json={"error": {
        "code": "forbidden", "message": "needs the read role"}})
    assert main(["--url", URL, "--token", "t", "inventory", "--type", "volume"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "" and "resource_id" in captured.out


def test_a_typo_is_still_refused_for_a_role_that_may_list_types(
    requests_mock: rm.Mocker, capsys: pytest.CaptureFixture[str]
) -> None:
    requests_mock.get(f"{URL}/v1/resources", json={"items": [], "next": None})
    requests_mock.get(f"{URL}/v1/resource-types", json={"items": [
        {"resource_type": "volume"}], "next": None})
    assert main(["--url", URL, "--token", "t", "inventory", "--type", "volumes"]) == 2
    assert "'volumes' is not a resource type" in capsys.readouterr().err


def test_a_line_number_is_ascii_digits() -> None:
    """``str.isdigit`` accepts ``²``, which ``int`` refuses: that was a traceback."""
    assert positive_line("12") == 12
    for bad in ("0", "x", "\u00b2", "-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            positive_line(bad)
