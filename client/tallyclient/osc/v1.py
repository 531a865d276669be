"""``openstack tally resource list|show``, ``lifecycle show``, ``usage show``,
``statement show``.

Each command asks the Reporting API through the functions ``tally`` uses
(``tallyclient.cli.commands``) and hands cliff columns and rows, so the usual
``-f table|json|csv|value|yaml`` and ``-c COLUMN`` apply. Column names are the API's
field names.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

from cliff.lister import Lister
from cliff.show import ShowOne
from osc_lib import exceptions
from osc_lib.cli import format_columns

from tallyclient.cli import billing, commands, table
from tallyclient.cli.http import MAX_PAGE, ApiClient, ApiError, Unreachable

RESOURCE_FIELDS = ("platform", "cloud", "resource_type", "resource_id", "project_id", "state",
                   "size", "live", "created_at", "deleted_at", "last_event_at",
                   "last_event_id")
RESOURCE_LIST_FIELDS = RESOURCE_FIELDS[:10]
INTERVAL_FIELDS = ("start", "end", "project_id", "state", "size", "event_id")


def _cell(value: Any) -> Any:
    """An object renders as ``k='v'`` in a table and stays an object in JSON/YAML."""
    if isinstance(value, dict):
        return format_columns.DictColumn(value)
    if isinstance(value, list):
        return format_columns.ListDictColumn(value)
    return value


def _rows(items: Sequence[dict[str, Any]], fields: Sequence[str]
          ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    return tuple(fields), [tuple(_cell(item.get(name)) for name in fields) for item in items]


def _ask(command: Callable[[ApiClient, argparse.Namespace], commands.Output],
         client: ApiClient, args: argparse.Namespace) -> commands.Output:
    """Run a request; an API refusal or no answer is a CommandError (exit 1)."""
    try:
        return command(client, args)
    except ApiError as exc:
        raise exceptions.CommandError(str(exc)) from None
    except Unreachable as exc:
        raise exceptions.CommandError(str(exc)) from None


def _paged(parser: argparse.ArgumentParser, what: str) -> None:
    """--limit, and every page of the list read at the API's largest page size."""
    parser.add_argument("--limit", type=int, metavar="<n>",
                        help=f"at most this many {what} (default: all)")
    parser.set_defaults(page_size=MAX_PAGE)


def _resource_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cloud", metavar="<cloud>", help="the cloud's name in Tally")
    parser.add_argument("resource_type", metavar="<type>", help="e.g. instance, volume")
    parser.add_argument("resource_id", metavar="<id>")
    parser.add_argument("--platform", default="openstack", help="default: openstack")


class _TallyCommand:
    app: Any

    def client(self) -> ApiClient:
        client: ApiClient = self.app.client_manager.tally
        return client


class ListResource(_TallyCommand, Lister):
    """List resources, current or as of an instant (a project member: its project's)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--cloud", metavar="<cloud>")
        parser.add_argument("--type", dest="resource_type", metavar="<type>")
        parser.add_argument("--project", metavar="<project-id>")
        live = parser.add_mutually_exclusive_group()
        live.add_argument("--live", dest="live", action="store_const", const=True,
                          default=True, help="only live resources (default)")
        live.add_argument("--deleted", dest="live", action="store_const", const=False,
                          help="only deleted resources")
        live.add_argument("--all", dest="live", action="store_const", const=None,
                          help="live and deleted")
        parser.add_argument("--as-of", metavar="<time>",
                            help="what was live at this instant (RFC 3339)")
        _paged(parser, "resources")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        output = _ask(commands.inventory, self.client(), parsed_args)
        return _rows(output.json, RESOURCE_LIST_FIELDS)


class ShowResource(_TallyCommand, ShowOne):
    """Show one resource's current row."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _resource_arguments(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        output = _ask(commands.resource, self.client(), parsed_args)
        columns, rows = _rows([output.json], RESOURCE_FIELDS)
        return columns, rows[0]


class ShowLifecycle(_TallyCommand, Lister):
    """Show the live intervals [start, end) of one resource."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        _resource_arguments(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        output = _ask(commands.lifecycle, self.client(), parsed_args)
        return _rows(output.json, INTERVAL_FIELDS)


class ShowUsage(_TallyCommand, Lister):
    """Show resource-seconds over [FROM, TO), per resource, project or type."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--from", dest="start", required=True, metavar="<time>",
                            help="start of the period (RFC 3339)")
        parser.add_argument("--to", dest="end", required=True, metavar="<time>",
                            help="end of the period, excluded (RFC 3339)")
        parser.add_argument("--cloud", metavar="<cloud>")
        parser.add_argument("--project", metavar="<project-id>")
        parser.add_argument("--group-by", choices=sorted(commands.USAGE_KEYS),
                            default="resource")
        parser.add_argument("--breakdown", action="store_true",
                            help="one row per state and size")
        _paged(parser, "groups")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        output = _ask(commands.usage, self.client(), parsed_args)
        keys = commands.USAGE_KEYS[parsed_args.group_by]
        if parsed_args.breakdown:
            return _rows(output.rows, (*keys, "state", "size", "seconds"))
        return _rows(output.rows, (*keys, "resources", "seconds"))


class ShowStatement(_TallyCommand, Lister):
    """Show a project's statement lines of a month, or every project's totals (a project
    member: its project's only)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--cloud", required=True, metavar="<cloud>")
        parser.add_argument("--period", required=True, metavar="<YYYY-MM>",
                            help="the month (UTC)")
        parser.add_argument("--project", metavar="<project-id>",
                            help="this project's lines (default: every project's totals)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        # The lines and adjustments as rows; cliff renders each format itself.
        request = argparse.Namespace(**{**vars(parsed_args), "format": "json"})
        output = _ask(billing.statement, self.client(), request)
        # A project's statement: its totals and status too (the footer of `tally`).
        self._statement = output.json if parsed_args.project is not None else None
        self._footer = output.footer
        names = tuple(name for name, _ in output.columns)
        table_format = getattr(parsed_args, "formatter", "table") == "table"
        return names, [tuple(table.compact(get(row)) if table_format else _cell(get(row))
                             for _, get in output.columns)
                       for row in output.rows]

    def produce_output(self, parsed_args: argparse.Namespace, column_names: Any,
                       data: Any) -> int:
        statement = getattr(self, "_statement", None)
        if statement is not None and parsed_args.formatter == "json":
            # The statement as the API answers it: currency, status, provisional,
            # subtotal, adjustments, total and its lines.
            self.app.stdout.write(json.dumps(statement, indent=2) + "\n")
            return 0
        code: int = super().produce_output(parsed_args, column_names, data)
        if statement is not None and parsed_args.formatter == "table" and self._footer:
            self.app.stdout.write(self._footer + "\n")
        return code
