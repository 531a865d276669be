"""``tally-manage --config-file F db upgrade [REV] | downgrade REV | current``,
``partitions ensure [--months-ahead N]`` and ``history prune --before YYYY-MM
[--archive DIR]`` (the monthly partitions of the history on PostgreSQL:
``reporting.db.partitions``, docs/operations.md "Partitioning and retention")."""

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

    partitions = subparsers.add_parser(
        "partitions", help="the monthly partitions of the history (PostgreSQL)")
    actions = partitions.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    ensure = actions.add_parser(
        "ensure", help="create the partitions of this month and the next N, and of every "
                       "month the DEFAULT partitions hold rows of")
    ensure.add_argument("--months-ahead", type=int, default=3, metavar="N")
    ensure.add_argument("--since", metavar="YYYY-MM",
                        help="also every month from YYYY-MM to this one")

    history = subparsers.add_parser("history", help="retention of the history (PostgreSQL)")
    actions = history.add_subparsers(dest="action", metavar="ACTION")
    actions.required = True
    prune = actions.add_parser(
        "prune", help="drop the partitions of the months before YYYY-MM, when no open "
                      "period, live resource or unbooked late event needs them")
    prune.add_argument("--before", required=True, metavar="YYYY-MM")
    prune.add_argument("--archive", metavar="DIR",
                       help="write each partition to DIR/<partition>.csv before dropping it")


def _refuse_a_missing_database(url: str) -> None:
    """``db current`` on a database that does not exist where opening it creates it (an
    SQLite file) would create it and report "at base": a typo in the path is refused
    instead."""
    from reporting.db import writes

    problem = writes.missing_database(url)
    if problem is not None:
        raise ConfigError(f"[database] connection {problem} (db upgrade creates it)")


def _history(conf: cfg.ConfigOpts) -> str:
    from pathlib import Path

    from reporting.clock import utcnow
    from reporting.db import partitions
    from reporting.db.engine import make_engine

    command = conf.command
    if command.name == "history":
        try:
            before = partitions.month_start(command.before)
        except ValueError as exc:
            raise ConfigError(f"--before: {exc}") from exc
    else:
        if command.months_ahead < 0:
            raise ConfigError(f"--months-ahead must be 0 or more, not {command.months_ahead}")
        try:
            since = partitions.month_start(command.since) if command.since else None
        except ValueError as exc:
            raise ConfigError(f"--since: {exc}") from exc
    _refuse_a_missing_database(conf.database.connection)
    engine = make_engine(conf.database.connection, pool_size=1, max_overflow=0)
    try:
        if command.name == "partitions":
            with engine.connect() as conn:
                if not partitions.is_partitioned(conn):
                    return ("the history is not partitioned (SQLite, or PostgreSQL before "
                            "migration 0032): nothing to create")
            created = partitions.ensure(engine, command.months_ahead, utcnow(), since)
            return ("created " + ", ".join(created)) if created else (
                "every partition exists already")
        archive = Path(command.archive) if command.archive else None
        pruned = partitions.prune(engine, before, archive)
    finally:
        engine.dispose()
    if not pruned.partitions:
        return f"no partition holds a month before {command.before}: nothing pruned"
    lines = ["dropped " + ", ".join(pruned.partitions)]
    lines += [f"archived {path}" for path in pruned.archived]
    return "\n".join(lines)


def _run(conf: cfg.ConfigOpts) -> str:
    from reporting.db import migrations

    if conf.command.name in ("partitions", "history"):
        return _history(conf)
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
