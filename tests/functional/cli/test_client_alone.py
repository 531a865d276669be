"""The client distribution installs alone: ``pip install client/`` in a fresh
virtualenv brings ``tally`` and none of the server (no Flask, no SQLAlchemy, no
``reporting``), and that ``tally`` reads a real Reporting API over HTTP.

pip resolves the client's declared dependencies from the machine's configured index
(its own settings, PIP_*, reach it); a failed install is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functional.cli.conftest import Api
from tests.functional.cli.test_cli_billing import priced  # noqa: F401 (fixture)
from tests.functional.reporting.fixtures import TOKENS

CLIENT_DIR = Path(__file__).resolve().parents[3] / "client"
SERVER_MODULES = ("flask", "sqlalchemy", "alembic", "psycopg", "oslo_messaging", "gunicorn",
                  "reporting", "collector", "simcloud", "mapping", "tally_common")


def _clean_env() -> dict[str, str]:
    """This environment without PYTHONPATH: the checkout must not leak into the venv."""
    return {name: value for name, value in os.environ.items()
            if name not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # No pip of its own (ensurepip's copy was a quarter of the build): this
    # environment's pip installs into it (``--python``), resolving as it would there.
    venv = tmp_path_factory.mktemp("client-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)],  # noqa: S603
                   check=True, env=_clean_env(), timeout=600)
    done = subprocess.run(  # noqa: S603 - this environment's pip, fixed arguments
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install",
         "--quiet", str(CLIENT_DIR)],
        env=_clean_env(), capture_output=True, text=True, timeout=1200, check=False)
    assert done.returncode == 0, f"pip install {CLIENT_DIR} failed:\n{done.stderr}"
    return venv


def _python(venv: Path, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(venv / "bin" / "python"), "-c", code],  # noqa: S603
                          env=_clean_env(), cwd=venv, capture_output=True, text=True,
                          timeout=120, check=False)


def test_the_client_venv_holds_none_of_the_server(client_venv: Path) -> None:
    for module in SERVER_MODULES:
        done = _python(client_venv, f"import {module}")
        assert done.returncode != 0 and "ModuleNotFoundError" in done.stderr, (
            f"{module} is importable beside the client alone")
    done = _python(client_venv, "import tallyclient, tallyclient.cli.main; "
                                "print(tallyclient.__file__)")
    assert done.returncode == 0, done.stderr
    installed = Path(done.stdout.strip()).resolve()
    assert installed.is_relative_to(client_venv.resolve()), installed  # not the checkout


def _tally(venv: Path, api: Api, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 - the venv's console script, fixed arguments
        [str(venv / "bin" / "tally"), "--url", api.url, "--token", TOKENS["read"], *argv],
        env=_clean_env(), cwd=venv, capture_output=True, text=True, timeout=120, check=False)


def test_the_client_alone_lists_resources_and_shows_a_statement(
        client_venv: Path, priced: Api) -> None:  # noqa: F811
    done = _tally(client_venv, priced, "--format", "json", "inventory", "--cloud", "c1",
                  "--project", "p1", "--all")
    assert (done.returncode, done.stderr) == (0, "")
    assert {item["resource_id"] for item in json.loads(done.stdout)} >= {"inst-a", "vol-a"}
    done = _tally(client_venv, priced, "statement", "--cloud", "c1", "--period", "2026-10",
                  "--project", "p1")
    assert (done.returncode, done.stderr) == (0, "")
    assert "open (provisional)  EUR subtotal 1.66" in done.stdout
