"""Files and URLs an operator writes: tokens, token files, the two clouds files and
the Reporting API's base URL.  Each mistake is one clear line, never a traceback or
a token that loads but can never match."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import requests

from collector.api_client import read_token
from collector.errors import ConfigurationError
from reporting.api.auth import AuthConfigError, Caller, load_tokens
from reporting.openstack.credentials import resolve_cloud
from reporting.sync.clouds import CloudsFileError, load_clouds_file
from reporting.sync.observation import RunAborted
from tally_common.api_url import ApiUrlError, check_base_url, describe_request_error
from tally_common.token_file import TokenFileError, read_token_file

ETC = Path(__file__).resolve().parents[3] / "etc" / "tally"


def _file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return str(path)


# -- the API's tokens file ----------------------------------------------------------------

def test_an_unquoted_numeric_token_must_be_quoted(tmp_path: Path) -> None:
    path = _file(tmp_path, "tokens.yaml", '"abc": read\n12345: admin\n')
    with pytest.raises(AuthConfigError, match=r"entry 2: the token 12345 is read as a number: "
                                               r'quote it \("12345": admin\)'):
        load_tokens(path)


def test_a_yaml_error_in_the_tokens_file_gives_the_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "tokens.yaml", """\
        "tok-a": read
        "tok-b": [admin
        """)
    with pytest.raises(AuthConfigError) as caught:
        load_tokens(path)
    message = str(caught.value)
    assert re.fullmatch(rf"\[api\] tokens_file {re.escape(path)} is not valid YAML at line 3, "
                        r"column 1: expected ',' or '\]', but got '<stream end>'", message), message


@pytest.mark.parametrize("token", ["caf\u20ac-token", "tok\u00e9n\u0142"])
def test_a_token_outside_latin1_is_refused_at_start(tmp_path: Path, token: str) -> None:
    path = _file(tmp_path, "tokens.yaml", f'"{token}": read\n')
    with pytest.raises(AuthConfigError, match="outside Latin-1"):
        load_tokens(path)


def test_a_latin1_token_still_loads(tmp_path: Path) -> None:
    path = _file(tmp_path, "tokens.yaml", '"caf\u00e9-token": read\n')
    assert load_tokens(path) == {"caf\u00e9-token": Caller("read")}


def test_a_token_with_surrounding_space_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, "tokens.yaml", '" tok": read\n')
    with pytest.raises(AuthConfigError, match="white space"):
        load_tokens(path)


# -- the clients' token files: one rule (the first line) everywhere --------------------------

def test_every_client_reads_the_first_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "token", "tok-ingest\n# rotated 2026-11-01\n")
    assert read_token_file(path) == "tok-ingest"
    assert read_token(path) == "tok-ingest"  # the collector, which read the whole file


def test_a_client_token_outside_latin1_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, "token", "tok\u20ac\n")
    with pytest.raises(TokenFileError, match="outside Latin-1"):
        read_token_file(path)
    with pytest.raises(ConfigurationError, match=r"\[collector\] token_file .*outside Latin-1"):
        read_token(path)


# -- Tally's clouds file and OpenStack's clouds.yaml ----------------------------------------

def test_openstack_clouds_yaml_as_tallys_clouds_file_is_named(tmp_path: Path) -> None:
    path = str(ETC / "clouds.yaml.example")
    with pytest.raises(CloudsFileError, match=r"looks like OpenStack's clouds.yaml .*"
                                              r"tally-clouds.yaml"):
        load_clouds_file(path)


def test_tallys_clouds_file_as_openstack_clouds_yaml_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(ETC / "tally-clouds.yaml.example")
    with pytest.raises(RunAborted, match=r"is Tally's clouds file .*OS_CLIENT_CONFIG_FILE"):
        resolve_cloud("prod-eu1", {"OS_CLIENT_CONFIG_FILE": path})


@pytest.mark.parametrize(("entry", "message"), [
    ("name: eu/prod\n    platform: openstack",
     r"cloud 'eu/prod': name must not hold '/' \(no route could serve it\)"),
    ("name: eu-prod\n    platform: open/stack",
     r"cloud 'eu-prod': platform 'open/stack' must not hold '/' \(no route could serve it\)"),
])
def test_the_clouds_file_refuses_a_slash_as_ingest_does(
        tmp_path: Path, entry: str, message: str) -> None:
    # The rule ingest applies to every event: such a cloud's resources could be stored
    # but never fetched (/v1/resources/{platform}/{cloud}/...).
    path = _file(tmp_path, "tally-clouds.yaml",
                 f"clouds:\n  - {entry}\n    adapter: openstack\n")
    with pytest.raises(CloudsFileError, match=message):
        load_clouds_file(path)


def test_the_example_clouds_file_loads() -> None:
    clouds = load_clouds_file(str(ETC / "tally-clouds.yaml.example"))
    assert set(clouds) == {"os-prod-eu1", "os-dev", "os-edge"}
    assert [name for name, entry in clouds.items() if not entry.reconciled] == ["os-edge"]
    assert {entry.clock for entry in clouds.values()} == {"wall"}


def test_a_yaml_error_in_the_clouds_file_gives_the_line(tmp_path: Path) -> None:
    path = _file(tmp_path, "tally-clouds.yaml", """\
        clouds:
          - name: a
            platform: openstack
           adapter: openstack
        """)
    with pytest.raises(CloudsFileError, match=r"not valid YAML at line 4, column \d+: "):
        load_clouds_file(path)


def test_a_clock_other_than_wall_or_simulated_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path, "tally-clouds.yaml", """\
        clouds:
          - {name: a, platform: openstack, adapter: openstack, clock: virtual}
        """)
    with pytest.raises(CloudsFileError, match="clock 'virtual' is not one of wall, simulated"):
        load_clouds_file(path)


@pytest.mark.parametrize(("entry", "message"), [
    ("clock_url: http://127.0.0.1:1/_sim/clock", "clock_url is the clock of a simulated cloud: "
                                                 "it needs clock: simulated"),
    ("clock: simulated, clock_url: 127.0.0.1:1/_sim/clock", "clock_url '127.0.0.1:1/_sim/clock' "
                                                            "is not an http:// or https:// URL"),
    ("clock: simulated, clock_url: 5", "clock_url 5 is not an http:// or https:// URL"),
])
def test_a_clock_url_is_a_simulated_clocks_url(tmp_path: Path, entry: str, message: str) -> None:
    path = _file(tmp_path, "tally-clouds.yaml", f"""\
        clouds:
          - {{name: a, platform: openstack, adapter: openstack, {entry}}}
        """)
    with pytest.raises(CloudsFileError, match=f"^clouds file {path}: cloud 'a': " + re.escape(message)):
        load_clouds_file(path)


def test_a_simulated_clock_url_is_read(tmp_path: Path) -> None:
    path = _file(tmp_path, "tally-clouds.yaml", """\
        clouds:
          - {name: a, platform: openstack, adapter: openstack, clock: simulated,
             clock_url: "http://127.0.0.1:1/_sim/clock"}
        """)
    assert load_clouds_file(path)["a"].clock_url == "http://127.0.0.1:1/_sim/clock"


# -- the Reporting API's base URL -------------------------------------------------------------

@pytest.mark.parametrize(("url", "message"), [
    ("127.0.0.1:8779", "has no http:// or https:// scheme: write it as e.g. http://127.0.0.1:8779"),
    ("localhost", "has no http:// or https:// scheme"),
    ("http://127.0.0.1:8779/v1", "without /v1 or /internal (Tally adds them): e.g. "
                                 "http://127.0.0.1:8779"),
    ("http://api.example/tally/v1/", "e.g. http://api.example/tally"),
    ("http://", "names no host"),
    ("http://h:port", "malformed port"),
    ("", "is not set"),
])
def test_a_wrong_base_url_says_what_a_right_one_looks_like(url: str, message: str) -> None:
    with pytest.raises(ApiUrlError, match="^x ") as caught:
        check_base_url("x", url)
    assert message in str(caught.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8779", "https://tally.example/prefix/",
                                 "http://[::1]:8779"])
def test_right_base_urls_pass(url: str) -> None:
    assert check_base_url("x", url) == url.rstrip("/")


def test_request_failures_read_as_one_short_reason() -> None:
    with pytest.raises(requests.RequestException) as refused:
        requests.get("http://127.0.0.1:1/v1/events", timeout=5)
    line = describe_request_error(refused.value, "http://127.0.0.1:1")
    assert line == "connection refused by 127.0.0.1:1 (is the Reporting API running there?)"
    with pytest.raises(requests.RequestException) as unknown:
        requests.get("http://no-such-host.invalid:8779/v1/events", timeout=5)
    line = describe_request_error(unknown.value, "http://no-such-host.invalid:8779")
    assert line.startswith("unknown host 'no-such-host.invalid'")
    assert "urllib3" not in line and "HTTPConnection" not in line


def test_an_entry_without_os_cloud_is_collected_only(tmp_path: Path) -> None:
    path = _file(tmp_path, "tally-clouds.yaml", """\
        clouds:
          - {name: a, platform: openstack, adapter: openstack, adapter_config: {os_cloud: x}}
          - {name: b, platform: openstack, adapter: openstack}
          - {name: c, platform: openstack, adapter: openstack, adapter_config: {}}
        """)
    clouds = load_clouds_file(path)
    assert {name: entry.reconciled for name, entry in clouds.items()} == {
        "a": True, "b": False, "c": False}


def test_a_misspelt_os_cloud_never_silently_stops_reconciliation(tmp_path: Path) -> None:
    path = _file(tmp_path, "tally-clouds.yaml", """\
        clouds:
          - {name: a, platform: openstack, adapter: openstack, adapter_config: {os_clod: x}}
        """)
    with pytest.raises(CloudsFileError, match=r"cloud 'a': adapter_config has no os_cloud, "
                                              r"so the cloud would be collected but not "
                                              r"reconciled, yet it holds os_clod"):
        load_clouds_file(path)
