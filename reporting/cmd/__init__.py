"""Entry points of tally-reporting and tally-manage: one ConfigOpts each.

Nothing here imports ``reporting.opts`` (and so prometheus_client) at module
level: ``tally-reporting`` must set ``PROMETHEUS_MULTIPROC_DIR`` first.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Collection, Mapping, Sequence

from oslo_config import cfg


class ConfigError(Exception):
    """A configuration the command cannot run with; main() prints it as one line."""


def _check_values(conf: cfg.ConfigOpts) -> None:
    """oslo.config parses values lazily: read every option now so a bad one fails the start."""
    from reporting import opts

    for group, group_opts in opts.registered():
        for opt in group_opts:
            try:
                getattr(conf[group], opt.dest)
            except (cfg.ConfigFileValueError, ValueError) as exc:
                # oslo says "Value for option X from LocationInfo(...) is not valid: why".
                why = str(exc).rpartition("is not valid: ")[2]
                raise ConfigError(f"[{group}] {opt.name}: invalid value: {why}") from None


def load_conf(
    argv: Sequence[str] | None,
    *,
    prog: str,
    cli_opts: Sequence[cfg.Opt] = (),
    config_files: list[str] | None = None,
    environ: Mapping[str, str] | None = None,
) -> cfg.ConfigOpts:
    """Parse the command line and config files into a ConfigOpts with every reporting
    option registered (oslo.log's too: ``setup_logging`` applies them), apply the
    environment aliases
    (``tally_common.env_aliases``; the process's environment unless ``environ`` is given)
    and check every value."""
    from reporting import opts
    from tally_common import logs, service_auth
    from tally_common.env_aliases import EnvAliasError, apply_env_aliases

    conf = cfg.ConfigOpts()
    opts.register_opts(conf)
    logs.register_options(conf)
    conf.register_cli_opts(list(cli_opts))
    try:
        conf(
            list(sys.argv[1:] if argv is None else argv),
            project="tally",
            prog=prog,
            default_config_files=config_files,
        )
    except cfg.Error as exc:
        raise ConfigError(str(exc).splitlines()[0]) from None
    try:
        apply_env_aliases(conf, os.environ if environ is None else environ)
    except EnvAliasError as exc:
        raise ConfigError(str(exc)) from None
    _check_values(conf)
    try:
        service_auth.register_plugin_opts(conf)  # [service_credentials] username, ...
    except service_auth.ServiceAuthError as exc:
        raise ConfigError(str(exc)) from None
    check_settings(conf, prog)
    return conf


def check_settings(conf: cfg.ConfigOpts, prog: str, *, only: Collection[str] | None = None) -> None:
    """An unknown Tally option or section is a ConfigError; an unknown option of a
    library's section a warning on stderr (``tally_common.config_check`` says why)."""
    from tally_common.config_check import UnknownSettingError, check_config_files

    try:
        warnings = check_config_files(conf, only=only)
    except UnknownSettingError as exc:
        raise ConfigError(str(exc)) from None
    for warning in warnings:
        print(f"{prog}: {warning}", file=sys.stderr)


def require_database(conf: cfg.ConfigOpts) -> str:
    """The configured database URL, credentials redacted; a ConfigError when
    ``[database] connection`` was never set (its default, an SQLite file in the
    working directory, is for the demo and development, never guessed by a command)."""
    from tally_common.config_check import redact_url

    location = conf.get_location("connection", "database")
    if location is None or location.location == cfg.Locations.opt_default:
        raise ConfigError(
            "[database] connection is not set: set it to "
            "postgresql+psycopg://USER:PASSWORD@HOST/DBNAME (or to sqlite:////PATH/tally.sqlite "
            "to run on SQLite on purpose)")
    from reporting.db import writes

    try:
        problem = writes.driver_problem(conf.database.connection)
    except Exception as exc:  # noqa: BLE001 - not a URL at all: SQLAlchemy says why
        problem = f"{type(exc).__name__}: {one_line(exc)}"
    if problem is not None:
        raise ConfigError(f"[database] connection: {problem}")
    return redact_url(conf.database.connection)


def one_line(exc: BaseException) -> str:
    """A single line naming what went wrong, without a traceback."""
    orig = getattr(exc, "orig", None)  # SQLAlchemy DBAPIError wraps the driver's error
    text = str(orig if orig is not None else exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first


def setup_logging(conf: cfg.ConfigOpts, prog: str, *, to_stderr: bool = False) -> None:
    """oslo.log's setup (``tally_common.logs``) with Alembic's INFO lines kept out.

    The API never migrates, yet ``/readyz`` uses Alembic: on its first import (the
    first probe of each worker, database up or not) Alembic logs the setup of each
    of its plugins, and every probe's migration context names its dialect; and
    ``tally-manage`` prints what a migration did in one line of its own.  Set once,
    with the logging, so no probe depends on a level it flips itself.  ``to_stderr``:
    a command whose stdout is its result (``tally_common.logs.setup``)."""
    from tally_common import logs

    logs.setup(conf, prog, to_stderr=to_stderr, quiet=("alembic",))
