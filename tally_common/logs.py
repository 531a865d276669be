"""One logging setup for every Tally command and server: oslo.log on its ConfigOpts.

A command registers oslo.log's options (``[DEFAULT] debug``, ``log_file``,
``use_stderr``, ``default_log_levels``, ... and ``--debug``, ``--log-file`` on its
command line) before it parses, then calls ``setup`` once its configuration is
loaded.  Every line then has oslo.log's form, e.g.
``2026-11-03 06:00:01.123 4242 INFO reporting.cmd.serve [-] database: ...``, in the
log file when one is set, else on stdout; a command whose stdout is its result
(``tally-sync``, ``tally-manage``, ``tally-demo``) logs to stderr instead
(``to_stderr``).

oslo.log appends the exception being handled to a WARNING or ERROR logged inside an
``except`` block; a Tally line names its reason itself, so it is logged after the
block.  The ``tally`` client CLI prints its results and has no log (docs/developer.md).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from oslo_config import cfg
from oslo_log import log


def register_options(conf: cfg.ConfigOpts) -> None:
    """oslo.log's options on ``conf``, before it parses."""
    log.register_options(conf)


def setup(conf: cfg.ConfigOpts, prog: str, *, to_stderr: bool = False,
          quiet: Iterable[str] = ()) -> None:
    """Configure the process's logging from ``conf`` (oslo.log), as ``prog``.

    ``to_stderr``: without a log file, and unless ``use_stderr`` is set, the lines go
    to stderr rather than oslo.log's stdout (with a log file, to the file alone).  The
    ``quiet`` loggers keep to WARNING and above (oslo.log's ``default_log_levels``
    already quiets amqp, sqlalchemy, urllib3, ...)."""
    if to_stderr and not (conf.log_file or conf.log_dir) and _unset(conf, "use_stderr"):
        conf.set_override("use_stderr", True)
    log.setup(conf, prog)
    for name in quiet:
        logging.getLogger(name).setLevel(logging.WARNING)


def _unset(conf: cfg.ConfigOpts, name: str) -> bool:
    location = conf.get_location(name)
    return location is None or location.location == cfg.Locations.opt_default


def command_line_logging(prog: str, *, debug: bool, to_stderr: bool = False) -> None:
    """The same setup for a command configured by its command line alone
    (``tally-simcloud``, ``tally-demo``): oslo.log's defaults, ``debug`` from it."""
    conf = cfg.ConfigOpts()
    register_options(conf)
    conf([], project="tally", prog=prog, default_config_files=[], default_config_dirs=[])
    conf.set_override("debug", debug)
    setup(conf, prog, to_stderr=to_stderr)
