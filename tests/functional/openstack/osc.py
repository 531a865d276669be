"""Running ``openstack --os-cloud ENTRY tally ...`` in the plugin's tests.

``openstack()`` calls the ``openstack`` command's own entry point
(``openstackclient.shell:main``, which finds the plugin through its entry points as the
installed command does) inside the test process, with its own standard streams and
environment, and gives back what a finished process would: exit code, stdout, stderr.
A new ``openstack`` process spends about a second of CPU importing openstackclient
before it does anything, and these tests run about eighty commands: that was the
largest share of CPU of any test directory. ``openstack_process()`` runs the installed
executable itself, for the tests that show the console script and the plugin install
and run together.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

from openstackclient import shell
from openstackclient.common import clientmanager
from osc_lib.clientmanager import ClientCache

OPENSTACK = str(Path(sys.executable).parent / "openstack")

Finished = subprocess.CompletedProcess[str]


def openstack_process(clouds: Path, entry: str, *argv: str) -> Finished:
    """The installed ``openstack`` command, as a process of its own."""
    return subprocess.run([OPENSTACK, "--os-cloud", entry, "tally", *argv],
                          env=_command_environment(clouds),
                          capture_output=True, text=True, timeout=120, check=False)


def openstack(clouds: Path, entry: str, *argv: str) -> Finished:
    """The ``openstack`` command's entry point run in this process: what the command
    prints and the code it exits with."""
    args = ["openstack", "--os-cloud", entry, "tally", *argv]
    _forget_clients()
    out, err = io.StringIO(), io.StringIO()
    # osc-lib sets the warnings filters of the process it runs in: kept to this run.
    with _environment(clouds), _logging_restored(), warnings.catch_warnings(), \
            contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = shell.main(args[1:])
        except SystemExit as exit_:  # argparse's usage errors and --help
            code = exit_.code if isinstance(exit_.code, int) else 1
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def _forget_clients() -> None:
    """openstackclient makes each plugin's client once per process: its ClientCache
    descriptors, set on the ClientManager class when openstackclient is imported, keep
    the first client made (with the first run's token). A new process starts without
    them; so does each run here."""
    for owner in clientmanager.ClientManager.__mro__:  # set on osc-lib's base class
        for attribute in vars(owner).values():
            if isinstance(attribute, ClientCache):
                attribute._handle = None


def _command_environment(clouds: Path) -> dict[str, str]:
    """The environment the command gets: this one without OS_* but the clouds file."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("OS_")}
    env["OS_CLIENT_CONFIG_FILE"] = str(clouds)
    return env


@contextlib.contextmanager
def _environment(clouds: Path) -> Iterator[None]:
    """This process's environment set to the command's for the run."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(_command_environment(clouds))
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _logging_restored() -> Iterator[None]:
    """cliff and osc-lib add a console handler to the root logger at every run and set
    levels (their own and the HTTP libraries'): undone after each, as a process's end
    would, so runs neither pile handlers up nor write into a finished run's stream."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    levels = {name: logger.level for name, logger in logging.root.manager.loggerDict.items()
              if isinstance(logger, logging.Logger)}
    try:
        yield
    finally:
        for handler in [h for h in root.handlers if h not in handlers]:
            root.removeHandler(handler)
            handler.close()
        root.setLevel(level)
        for name, logger in logging.root.manager.loggerDict.items():
            if isinstance(logger, logging.Logger):
                logger.setLevel(levels.get(name, logging.NOTSET))
