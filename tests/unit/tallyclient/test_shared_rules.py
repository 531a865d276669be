"""The client keeps its own copy of the rules it shares with the server's commands (the
API's base URL, a token file, documents with a key written twice): it installs alone
(client/pyproject.toml), so it may not import tally_common or reporting.  These tests
hold the two copies to the same answers, message for message."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests
import yaml

from reporting import unique_keys, yaml_errors
from tally_common import api_url as server_url
from tally_common import token_file as server_token
from tallyclient import api_url as client_url
from tallyclient import documents
from tallyclient import token_file as client_token

BASE_URLS = ["http://127.0.0.1:8779", "http://127.0.0.1:8779/", "127.0.0.1:8779", "",
             None, "http://", "http://host:port", "http://h:8779/v1", "https://h/x/internal/y",
             "http://h:8779/?a=1", "http://h:8779/#f", " https://tally.example/api/ "]


def _answer(check: object, url: str | None) -> str:
    try:
        return "ok " + check("--url", url)  # type: ignore[operator]
    except ValueError as exc:
        return f"{type(exc).__name__}: {exc}"


@pytest.mark.parametrize("url", BASE_URLS)
def test_the_base_url_rule_is_the_servers(url: str | None) -> None:
    assert _answer(client_url.check_base_url, url) == _answer(server_url.check_base_url, url)


@pytest.mark.parametrize("exc", [
    requests.Timeout("read timed out"),
    requests.ConnectionError("Failed to establish a new connection: [Errno 111] Connection refused"),
    requests.ConnectionError("NameResolutionError: Name or service not known"),
    requests.exceptions.SSLError("certificate verify failed"),
    requests.ConnectionError("HTTPConnectionPool(host='h'): Caused by X('boom: went away')"),
])
def test_a_request_error_reads_as_the_servers(exc: requests.RequestException) -> None:
    base = "http://user:secret@tally.test:8779"
    assert client_url.describe_request_error(exc, base) == \
        server_url.describe_request_error(exc, base)


@pytest.mark.parametrize("content", [b"tok\n", b"  tok  \nsecond\n", b"", b"\n\n", b"\xff\xfe",
                                     "t\u20acn".encode(), b"to\x07k"])
def test_the_token_file_rule_is_the_servers(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "token"
    path.write_bytes(content)
    answers = []
    for rule in (client_token, server_token):
        try:
            answers.append("ok " + rule.read_token_file(str(path)))
        except ValueError as exc:
            answers.append(f"error: {exc}")
    assert answers[0] == answers[1]


def test_a_missing_token_file_reads_as_the_servers(tmp_path: Path) -> None:
    path = str(tmp_path / "absent")
    with pytest.raises(client_token.TokenFileError) as client_error:
        client_token.read_token_file(path)
    with pytest.raises(server_token.TokenFileError) as server_error:
        server_token.read_token_file(path)
    assert str(client_error.value) == str(server_error.value)


@pytest.mark.parametrize("text", ['{"a": 1, "b": {"c": 2, "c": 3}}', '{"a": 1}',
                                  '{\n  "x": 1,\n  "x": 2\n}', '[{"k": 1}, {"k": 1, "k": 2}]'])
def test_json_documents_read_as_the_servers(text: str) -> None:
    answers = []
    for reader in (documents, unique_keys):
        try:
            answers.append(repr(reader.loads_json(text, parse_float=str)))
        except ValueError as exc:
            answers.append(f"error: {exc}")
    assert answers[0] == answers[1]


@pytest.mark.parametrize("text", ["a: 1\nb: 2\n", "a: 1\na: 2\n", "base: &b {x: 1}\nv:\n  <<: *b\n  x: 2\n",
                                  "a: [1\n", "a: 1\n  b: 2\n"])
def test_yaml_documents_read_as_the_servers(text: str) -> None:
    answers = []
    for loader, where in ((documents.UniqueKeyLoader, documents.where_and_why),
                          (unique_keys.UniqueKeyLoader, yaml_errors.where_and_why)):
        try:
            answers.append(repr(yaml.load(text, Loader=loader)))  # noqa: S506 - a SafeLoader
        except yaml.YAMLError as exc:
            answers.append(f"{type(exc).__name__}{where(exc)}")
    assert answers[0] == answers[1]
