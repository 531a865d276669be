"""``tally-manage --config-file F db upgrade [REV] | downgrade REV | current``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from oslo_config import cfg

from reporting.cmd import ConfigError, load_conf, one_line, require_database, setup_logging

PROG = "tally-manage"


def _add_commands(subparsers: argparse._SubParsersAction) -> None:
    db = subparsers.add_parser("db", help="migrate the reporting database")
    actions = db.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    up = actions.add_parser("upgrade", help="migrate to REV (default: head)")
    up.add_argument("revision", nargs="?", default="head")
    down = actions.add_parser("downgrade", help="migrate back to REV (e.g. base)")
    down.add_argument("revision")
    actions.add_parser("current", help="print the revision the database is at")


def _refuse_a_missing_database(url: str) -> None:
    """``db current`` on a database that does not exist where opening it creates it (an
    SQLite file) would create it and report "at base": a typo in the path is refused
    instead."""
    from reporting.db import writes

    problem = writes.missing_database(url)
    if problem is not None:
        raise ConfigError(f"[database] connection {problem} (db upgrade creates it)")


def _run(conf: cfg.ConfigOpts) -> str:
    from reporting.db import migrations

    action = conf.command.action
    if action == "current":
        _refuse_a_missing_database(conf.database.connection)
    if action == "upgrade":
        migrations.upgrade(conf, conf.command.revision)
    elif action == "downgrade":
        migrations.downgrade(conf, conf.command.revision)
    at = migrations.current(conf)
    heads = set(migrations.heads())
    if not at:
        return "database is at base (no migration applied)"
    marker = " (head)" if set(at) == heads else " (behind head " + ", ".join(sorted(heads)) + ")"
    return "database is at " + ", ".join(at) + marker


def main(argv: Sequence[str] | None = None) -> int:
    command = cfg.SubCommandOpt("command", title="commands", handler=_add_commands)
    try:
        conf = load_conf(argv, prog=PROG, cli_opts=[command])
        setup_logging(conf, PROG, to_stderr=True)
        print(f"database: {require_database(conf)}")
        print(_run(conf))
    except ConfigError as exc:
        print(f"{PROG}: configuration error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 - one clear line for the operator
        print(f"{PROG}: error: {one_line(exc)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
