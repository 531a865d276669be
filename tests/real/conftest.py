"""Real nova from PyPI, in a virtualenv of its own, driven by tests/real/nova_driver.py.

nova pins its own dependencies (oslo.*, SQLAlchemy, eventlet...), so it never enters
Tally's virtualenv: a session fixture builds one under the cache directory
(``TALLY_TEST_CACHE_DIR``, default ``~/.cache/tally-tests``), keyed by the nova
series, the Python version and the requirements file, and later runs reuse it.  The
driver runs in that virtualenv's python; the test talks to it over JSON lines.

Nothing here skips: a nova that cannot be installed or started FAILS the tier, with
pip's or nova's own output in the failure (tests/real/service_process.py, shared by
the tier's services).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.real.service_process import ServiceProcess, service_python
from tests.real.service_process import venv_path as service_venv_path

HERE = Path(__file__).resolve().parent
REQUIREMENTS = HERE / "nova-requirements.txt"
DRIVER = HERE / "nova_driver.py"
# nova's services, placement and the API come up in tens of seconds on a quiet machine.
START_TIMEOUT_S = 600
COMMAND_TIMEOUT_S = 300


def venv_path() -> Path:
    """Where the nova virtualenv of this Python and requirements file lives."""
    return service_venv_path("nova-34", REQUIREMENTS)


@pytest.fixture(scope="session")
def nova_python() -> Path:
    """The python of the nova virtualenv, built on first use (one builder at a time)."""
    return service_python("nova", venv_path(), REQUIREMENTS,
                          "nova.tests.functional.integrated_helpers, placement")


class RealNova(ServiceProcess):
    """One nova_driver.py process: nova's services, its API on a loopback port."""

    def __init__(self, python: Path, workdir: Path, transport_url: str, identity_url: str,
                 exchange: str, keystone: dict[str, Any] | None = None) -> None:
        """``identity_url``: the simulated cloud's keystone, in front of a stubbed
        keystonemiddleware; or ``keystone`` (``auth_url`` and the ``service``,
        ``admin`` and ``member`` accounts): a real one, through keystonemiddleware."""
        where = ["--identity-url", identity_url]
        if keystone is not None:
            settings = workdir / "nova-keystone.json"
            settings.write_text(json.dumps(keystone))
            where = ["--keystone", str(settings)]
        super().__init__("nova", python, DRIVER,
                         ["--transport-url", transport_url, *where, "--exchange", exchange],
                         workdir, starting="nova's services to start",
                         start_timeout=START_TIMEOUT_S, command_timeout=COMMAND_TIMEOUT_S)
        self.compute_url: str = self.ready["compute_url"]
        self.project_id: str = self.ready["project_id"]


@pytest.fixture
def real_nova_factory(nova_python: Path, tmp_path: Path) -> Iterator[Any]:
    started: list[RealNova] = []

    def start(transport_url: str, identity_url: str, exchange: str,
              keystone: dict[str, Any] | None = None) -> RealNova:
        nova = RealNova(nova_python, tmp_path, transport_url, identity_url, exchange, keystone)
        started.append(nova)
        return nova

    try:
        yield start
    finally:
        for nova in started:
            nova.stop()
