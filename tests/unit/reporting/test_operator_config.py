"""What an operator's configuration gets from every reporting command: a misspelt
option or section is refused (or warned about, in a library's section), the
database is never guessed, ``[api] bind`` is checked at start, and each command
names the database or API it uses with its credentials redacted."""

from __future__ import annotations

import socket
import sys
import textwrap
from pathlib import Path

import pytest

from reporting import wsgi
from reporting.cmd import ConfigError, load_conf, manage, serve
from reporting.cmd import sync as sync_cmd
from reporting.cmd.bind import check_bind, parse_bind
from tally_common.config_check import redact_url


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _err_lines(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


@pytest.fixture(autouse=True)
def _no_database_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OS_DATABASE__CONNECTION", raising=False)
    # tally-reporting's main points prometheus_client at a directory of its own (and
    # removes it): undone after each test, or /metrics of later tests would read it.
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))


# -- unknown options and sections ---------------------------------------------------------

MISSPELT = "[database]\nconection = postgresql+psycopg://tally:secret@127.0.0.1/tally\n"


@pytest.mark.parametrize("main", [serve.main, manage.main, sync_cmd.main],
                         ids=["tally-reporting", "tally-manage", "tally-sync"])
def test_a_misspelt_option_stops_every_command_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], main) -> None:
    config = _write(tmp_path / "tally.conf", MISSPELT)
    args = ["--config-file", config] + (["db", "current"] if main is manage.main else [])
    assert main(args) == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1, lines
    assert "unknown option [database] conection in " + config in lines[0]
    assert "secret" not in lines[0]
    assert not (tmp_path / "tally.sqlite").exists()


def test_an_unknown_section_stops_the_command(tmp_path: Path) -> None:
    config = _write(tmp_path / "tally.conf", "[databse]\nconnection = sqlite://\n")
    with pytest.raises(ConfigError, match=r"unknown section \[databse\]"):
        load_conf(["--config-file", config], prog="t")


def test_the_wsgi_entry_refuses_a_misspelt_option(tmp_path: Path) -> None:
    config = _write(tmp_path / "tally.conf", MISSPELT)
    with pytest.raises(ConfigError, match=r"\[database\] conection"):
        wsgi.load_application({"TALLY_CONFIG_FILE": config})


def test_an_unknown_default_option_is_a_warning_that_names_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write(tmp_path / "tally.conf", "[DEFAULT]\ndebgu = true\n[api]\nbind = 127.0.0.1:0\n")
    load_conf(["--config-file", config], prog="tally-sync")
    assert _err_lines(capsys) == [
        f"tally-sync: WARNING: unknown option [DEFAULT] debgu in {config}: not an option of "
        "oslo.log / oslo.messaging as installed; it is ignored"]


def test_sections_of_other_commands_and_libraries_are_left_to_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write(tmp_path / "tally.conf",
                    "[keystone_authtoken]\nwww_authenticate_uri = http://k\n"
                    "[collector]\ncloud = x\n[oslo_messaging_rabbit]\nssl = true\n")
    conf = load_conf(["--config-file", config], prog="tally-manage")
    assert conf.api.bind == "127.0.0.1:8779"
    assert _err_lines(capsys) == []


def test_deprecated_names_and_section_case_follow_oslo(tmp_path: Path) -> None:
    config = _write(tmp_path / "tally.conf", "[Database]\nconnection = sqlite://\n")
    assert load_conf(["--config-file", config], prog="t").database.connection == "sqlite://"


def test_a_config_dir_is_checked_too(tmp_path: Path) -> None:
    directory = tmp_path / "tally.conf.d"
    directory.mkdir()
    _write(directory / "10-db.conf", "[sync]\napi_ur = http://x\n")
    with pytest.raises(ConfigError, match=r"\[sync\] api_ur in .*10-db.conf"):
        load_conf(["--config-dir", str(directory)], prog="t")


# -- the database is never guessed --------------------------------------------------------

def test_reporting_without_a_database_connection_refuses_to_start(
        tmp_path: Path, tokens_file: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = _write(tmp_path / "tally.conf", f"[api]\ntokens_file = {tokens_file}\n")
    assert serve.main(["--config-file", config]) == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1 and "[database] connection is not set" in lines[0], lines
    assert "postgresql+psycopg://" in lines[0] and "sqlite" in lines[0]
    assert list(tmp_path.glob("*.sqlite*")) == []
    with pytest.raises(ConfigError, match="connection is not set"):
        wsgi.load_application({"TALLY_CONFIG_FILE": config})


# postgres:// is no SQLAlchemy dialect; postgresql+psycopg2:// (and postgresql:// under
# SQLAlchemy 2.0, which picks psycopg2) names a driver Tally does not install.
@pytest.mark.parametrize("url", ["postgres://tally:s3cret@127.0.0.1/tally",
                                 "postgresql+psycopg2://tally:s3cret@127.0.0.1/tally"])
def test_a_postgresql_url_without_tallys_driver_gets_a_hint(
        url: str, tmp_path: Path, tokens_file: str,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # psycopg2 is not installed by Tally; where it happens to be, it is made unloadable
    # here, so the URL names a driver that cannot load on every machine.
    monkeypatch.setitem(sys.modules, "psycopg2", None)
    config = _write(tmp_path / "tally.conf",
                    f"[api]\nbind = 127.0.0.1:0\ntokens_file = {tokens_file}\n"
                    f"[database]\nconnection = {url}\n")
    assert serve.main(["--config-file", config]) == 2
    lines = _err_lines(capsys)
    assert len(lines) == 1, lines
    assert "write postgresql+psycopg://USER:PASSWORD@HOST/DBNAME" in lines[0], lines
    assert "s3cret" not in lines[0]
    config = _write(tmp_path / "tally.conf", f"[database]\nconnection = {url}\n")
    assert manage.main(["--config-file", config, "db", "current"]) != 0
    assert "write postgresql+psycopg://" in capsys.readouterr().err


def test_manage_without_a_database_connection_reports_on_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    config = _write(tmp_path / "tally.conf", "[api]\n")
    assert manage.main(["--config-file", config, "db", "current"]) == 2
    assert "[database] connection is not set" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [tmp_path / "tally.conf"]


def test_manage_current_refuses_an_sqlite_file_that_does_not_exist(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "typo" / "tally.sqlite"
    config = _write(tmp_path / "tally.conf", f"[database]\nconnection = sqlite:///{missing}\n")
    assert manage.main(["--config-file", config, "db", "current"]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not missing.parent.exists()


def test_the_environment_source_counts_as_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'env.sqlite'}"
    monkeypatch.setenv("OS_DATABASE__CONNECTION", url)
    config = _write(tmp_path / "tally.conf", "[api]\n")
    assert manage.main(["--config-file", config, "db", "upgrade"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"database: {url}" and "(head)" in out[-1]


def test_manage_names_the_database_with_its_password_redacted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write(tmp_path / "tally.conf",
                    "[database]\nconnection = postgresql+psycopg://tally:s3cret@127.0.0.1:1/x\n")
    assert manage.main(["--config-file", config, "db", "current"]) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == \
        "database: postgresql+psycopg://tally:***@127.0.0.1:1/x"
    assert "s3cret" not in captured.out + captured.err


@pytest.mark.parametrize(("url", "shown"), [
    ("rabbit://tally:pw@h1:5672,tally:pw2@h2:5672/vh", "rabbit://tally:***@h1:5672,tally:***@h2:5672/vh"),
    ("rabbit://guest@h/", "rabbit://guest@h/"),
    ("postgresql+psycopg://u:p%40ss@db/tally", "postgresql+psycopg://u:***@db/tally"),
    (None, "(not set)"),
])
def test_redact_url(url: str | None, shown: str) -> None:
    assert redact_url(url) == shown


# -- [api] bind ---------------------------------------------------------------------------

@pytest.mark.parametrize(("value", "parsed"), [
    ("127.0.0.1:8779", ("127.0.0.1", 8779)),
    ("127.0.0.1", ("127.0.0.1", 8779)),
    ("[::1]:8780", ("::1", 8780)),
    ("[::1]", ("::1", 8779)),
    ("0.0.0.0:0", ("0.0.0.0", 0)),
])
def test_bind_values_parse(value: str, parsed: tuple[str, int]) -> None:
    assert parse_bind(value) == parsed


@pytest.mark.parametrize("value", ["127.0.0.1;18790", "127.0.0.1:port", "127.0.0.1:65536",
                                   "::1:8779", ":8779", "[::1", "", "127.0.0.1:-1",
                                   "127.0.0.1:\u00b2"])
def test_bad_bind_values_name_the_option(value: str) -> None:
    with pytest.raises(ConfigError, match=r"^\[api\] bind "):
        parse_bind(value)


def test_a_port_in_use_is_refused_at_start(tmp_path: Path, tokens_file: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        with pytest.raises(ConfigError, match="address already in use"):
            check_bind(f"127.0.0.1:{port}")
        config = _write(tmp_path / "tally.conf",
                        f"[database]\nconnection = sqlite:///{tmp_path / 'db.sqlite'}\n"
                        f"[api]\ntokens_file = {tokens_file}\nbind = 127.0.0.1:{port}\n")
        assert serve.main(["--config-file", config]) == 2
    lines = _err_lines(capsys)
    assert lines == [f"tally-reporting: configuration error: [api] bind '127.0.0.1:{port}': "
                     "cannot listen there: address already in use"]


def test_tally_reporting_hands_gunicorn_the_parsed_address(
        tmp_path: Path, tokens_file: str, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, str] = {}

    class RecordingServer:
        def run(self) -> None:
            pass

    def recording_app(conf, app):  # noqa: ANN001, ANN202
        seen["bind"] = conf.api.bind
        return RecordingServer()

    monkeypatch.setattr(serve, "_gunicorn_app", recording_app)
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    # A bare host gets the default port (8779; a free one here, other tests may hold 8779).
    monkeypatch.setattr("reporting.cmd.bind.DEFAULT_PORT", port)
    config = _write(tmp_path / "tally.conf",
                    f"[database]\nconnection = sqlite:///{tmp_path / 'db.sqlite'}\n"
                    f"[api]\ntokens_file = {tokens_file}\nbind = 127.0.0.1\n")
    try:
        assert serve.main(["--config-file", config]) == 0
    finally:
        import gc

        gc.unfreeze()
    assert seen["bind"] == f"127.0.0.1:{port}"


def test_keystone_authtoken_is_checked_once_the_middleware_registered_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """keystonemiddleware and its auth plugin register [keystone_authtoken] when the app
    builds them: the plugin's own options pass, a misspelt one is a warning."""
    config = _write(tmp_path / "tally.conf", textwrap.dedent("""\
        [database]
        connection = sqlite://
        [api]
        auth_strategy = keystone
        [keystone_authtoken]
        www_authenticate_uri = http://127.0.0.1:5000
        auth_url = http://127.0.0.1:5000
        auth_type = password
        username = tally
        password = secret
        project_name = service
        user_domain_name = Default
        project_domain_name = Default
        usernmae = typo
        """))
    wsgi.load_application({"TALLY_CONFIG_FILE": config})
    assert _err_lines(capsys) == [
        f"tally-reporting-wsgi: WARNING: unknown option [keystone_authtoken] usernmae in "
        f"{config}: not an option of keystonemiddleware as installed; it is ignored"]
