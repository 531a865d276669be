"""``tally --os-cloud NAME`` with keystone unreachable: one line naming keystone's
address and why, not keystoneauth's and urllib3's texts."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tallyclient.cli.main import main


def test_keystone_unreachable_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  gone:\n    auth:\n"
        f"      auth_url: http://127.0.0.1:{port}/v3\n"
        "      username: u\n      password: p\n      project_name: p\n"
        "      user_domain_name: Default\n      project_domain_name: Default\n"
        "    identity_api_version: 3\n")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    assert main(["--os-cloud", "gone", "inventory"]) == 1
    err = capsys.readouterr().err
    assert err == (f"tally: cloud gone: cannot reach keystone: connection refused by "
                   f"127.0.0.1:{port} (is keystone running there?)\n"), err
