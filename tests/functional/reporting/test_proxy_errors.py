"""What a client receives through the shipped nginx (deploy/nginx/tally-reporting.conf,
only its listen port and upstream rewritten) in front of a real tally-reporting
(gunicorn): every error is the API's JSON error, whichever of nginx, gunicorn or the
app refused the request. Requests are written on raw sockets, so a malformed or
oversized one reaches the proxy exactly as written."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml

from tests.conftest import sqlite_copy
from tests.functional.reporting.fixtures import RunningServer, start_server, write_config
from tests.functional.reporting.test_slow_clients import free_port, running_nginx

READ = "Authorization: Bearer tok-read\r\n"


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory, tokens_file_module: str,
          sqlite_migrated_template: Path) -> Iterator[str]:
    tmp = tmp_path_factory.mktemp("proxy-errors")
    db_url = sqlite_copy(sqlite_migrated_template, tmp / "tally.sqlite")
    server: RunningServer = start_server(
        write_config(tmp / "reporting.conf", db_url, tokens_file_module), tmp / "reporting.log")
    try:
        with running_nginx(tmp / "nginx", urlsplit(server.base_url).netloc) as url:
            yield url
    finally:
        server.stop()
    assert "Traceback" not in server.log.read_text(errors="replace")


@pytest.fixture(scope="module")
def tokens_file_module(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tests.unit.reporting.fixtures import TOKENS

    path = tmp_path_factory.mktemp("tokens") / "tokens.yaml"
    path.write_text(yaml.safe_dump({token: role for role, token in TOKENS.items()}))
    return str(path)


def exchange(base_url: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` and read the whole answer (the request asks to close)."""
    address = urlsplit(base_url)
    with socket.create_connection((address.hostname, address.port), timeout=30) as sock:
        sock.sendall(raw)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    head, _, body = b"".join(chunks).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {name.strip().lower(): value.strip()
               for name, _, value in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding") == "chunked":
        body = _dechunk(body)
    return status, headers, body


def _dechunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, rest = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0], 16)
        if size == 0:
            break
        out += rest[:size]
        body = rest[size + 2:]
    return out


def assert_json_error(answer: tuple[int, dict[str, str], bytes], status: int | None = None
                      ) -> dict[str, str]:
    got, headers, body = answer
    if status is not None:
        assert got == status, (got, body[:300])
    assert got >= 400, (got, body[:300])
    assert headers.get("content-type", "").startswith("application/json"), (got, headers, body)
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message"} and error["code"] and error["message"], error
    return error


def get(path: str, extra: str = "") -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: tally\r\n{READ}{extra}Connection: close\r\n\r\n".encode()


def test_request_lines_around_every_limit_get_json(proxy: str) -> None:
    # "GET " + path + " HTTP/1.1" of each length: the app (a filter longer than 255
    # characters is its 400), nginx (414) or gunicorn; never an HTML page.
    prefix = "/v1/resources?cloud="
    for line_length in (4090, 4094, 4096, 4200, 8100, 8185, 8189, 8190, 8191, 8192, 8200,
                        12000):
        path = prefix + "c" * (line_length - len("GET  HTTP/1.1") - len(prefix))
        answer = exchange(proxy, get(path))
        error = assert_json_error(answer)
        if line_length <= 8190:
            assert answer[0] == 400 and "cloud" in error["message"], (line_length, error)
        else:
            assert answer[0] == 414, (line_length, answer[0])


def test_long_and_many_headers_get_the_apps_answer_or_json(proxy: str) -> None:
    # 200 headers: beyond gunicorn's default of 100, within nginx's 32 KiB.
    many = "".join(f"X-Extra-{n}: {n}\r\n" for n in range(200))
    status, _headers, body = exchange(proxy, get("/v1/resources", many))
    assert status == 200, body[:300]
    for size in (8000, 8180, 8190, 8192, 9000):
        # X-Forwarded-For grows in the proxy (", 127.0.0.1" appended).
        for name in ("X-Note", "X-Forwarded-For"):
            line = f"{name}: " + "1" * (size - len(name) - 2)
            status, headers, body = exchange(proxy, get("/v1/resources", line + "\r\n"))
            if status == 200:
                assert headers["content-type"].startswith("application/json")
            else:
                assert_json_error((status, headers, body), 431)
    assert_json_error(exchange(proxy, get("/v1/resources", "X-Big: " + "a" * 8000 + "\r\n"
                                          + "".join(f"X-Big-{n}: {'a' * 8000}\r\n"
                                                    for n in range(5)))), 431)


@pytest.mark.parametrize(("raw", "status"), [
    (b"GET /v1/resources HTTP/1.1 extra\r\nHost: tally\r\n\r\n", 400),
    (b"GET /v1/resources HTTP/1.1\r\nHost: tally\r\nBad Header\r\n\r\n", 400),
    (b"TRACE / HTTP/1.1\r\nHost: tally\r\nConnection: close\r\n\r\n", 405),
    (b"POST /v1/events HTTP/1.1\r\nHost: tally\r\nTransfer-Encoding: gzip\r\n"
     b"Connection: close\r\n\r\n", 501),
    (b"GET /v1/resources HTTP/2.0\r\nHost: tally\r\n\r\n", 505),
    (b"GET /v1//resources HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n", 308),
    (b"GET /nowhere HTTP/1.1\r\nHost: tally\r\nConnection: close\r\n\r\n", 404),
])
def test_malformed_requests_get_json(proxy: str, raw: bytes, status: int) -> None:
    answer = exchange(proxy, raw)
    if status == 308:  # the API's: a JSON body and a relative Location
        assert answer[0] == 308 and answer[1]["location"] == "/v1/resources", answer
        assert "evil" not in json.dumps(json.loads(answer[2]))
        return
    assert_json_error(answer, status)


def test_an_unreachable_api_is_a_json_502(tmp_path: Path) -> None:
    with running_nginx(tmp_path / "nginx", f"127.0.0.1:{free_port()}") as url:
        assert_json_error(exchange(url, get("/v1/resources")), 502)
