"""``openstack tally account list|show|statement``, ``account summary list``,
``account line list``,
``account commitment list``, ``account discount list``,
``period list|export`` and ``delivery list``: the billing reads of ``tally``.

The writes (closing a period, booking credits and charges, adding accounts, ...) are
in ``tallyclient.osc.writes``. Each command asks the API through ``tally``'s own
functions (``tallyclient.cli.billing``, which follow ``next_marker`` across pages) and
hands cliff the same columns ``tally`` prints: in a table or as text (csv, value) every
cell is written as ``tally`` writes it (``-`` for null, ``true``/``false``, ``k=v``);
JSON and YAML keep the API's values.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, ClassVar

from cliff.lister import Lister
from cliff.show import ShowOne

from tallyclient.cli import billing, commands, table
from tallyclient.cli.http import ApiClient
from tallyclient.osc.v1 import _ask, _cell, _TallyCommand

STRUCTURED = ("json", "yaml")
ACCOUNT_FIELDS = ("account_id", "description", "created_at", "created_by", "memberships")


def _text(parsed_args: argparse.Namespace) -> bool:
    return getattr(parsed_args, "formatter", "table") not in STRUCTURED


def _table(output: commands.Output, parsed_args: argparse.Namespace
           ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    names = tuple(name for name, _ in output.columns)
    text = _text(parsed_args)
    return names, [tuple(table.compact(get(row)) if text else _cell(get(row))
                         for _, get in output.columns) for row in output.rows]


def _membership(member: dict[str, Any]) -> str:
    return (f"{member['cloud']} {member['project_id']} number {member['number']} "
            f"from {member['effective_from']}")


class _BillingList(_TallyCommand, Lister):
    """A list read with one of ``tally``'s billing functions."""

    # A class attribute, read through the class: the function is not bound to self.
    fetch: ClassVar[Callable[[ApiClient, argparse.Namespace], commands.Output]]
    # The command's positional arguments: (name, metavar, help).
    positionals: ClassVar[tuple[tuple[str, str, str], ...]] = ()

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        for name, metavar, text in type(self).positionals:
            parser.add_argument(name, metavar=metavar, help=text)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        # "table": the functions answering raw bytes for csv/json answer rows instead.
        request = argparse.Namespace(**{**vars(parsed_args), "format": "table"})
        output = _ask(type(self).fetch, self.client(), request)
        self._footer = output.footer
        return _table(output, parsed_args)

    def produce_output(self, parsed_args: argparse.Namespace, column_names: Any,
                       data: Any) -> int:
        code: int = super().produce_output(parsed_args, column_names, data)
        # Under a table only, as `tally` prints it (an export's cloud, close and count).
        if parsed_args.formatter == "table" and self._footer:
            self.app.stdout.write(self._footer + "\n")
        return code


class ListAccount(_BillingList):
    """List the billing accounts (read role)."""

    fetch = billing.account_list


class ShowAccount(_TallyCommand, ShowOne):
    """Show an account and the cloud projects it holds (read role)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("account", metavar="<account>", help="the account's id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        body = _ask(billing.account_show, self.client(), parsed_args).json
        if not _text(parsed_args):
            return ACCOUNT_FIELDS, tuple(_cell(body.get(name)) for name in ACCOUNT_FIELDS)
        values = [table.compact(body.get(name)) for name in ACCOUNT_FIELDS[:-1]]
        members = "\n".join(_membership(m) for m in body["memberships"]) or "-"
        return ACCOUNT_FIELDS, (*values, members)


class ShowAccountStatement(_TallyCommand, Lister):
    """Show an account's statement of a month: every project's lines, the adjustments,
    the credits and charges, and the totals per currency (read role)."""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("account", metavar="<account>", help="the account's id")
        parser.add_argument("--period", required=True, metavar="<YYYY-MM>",
                            help="the month (UTC)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        request = argparse.Namespace(**{**vars(parsed_args), "format": "json"})
        output = _ask(billing.account_statement, self.client(), request)
        self._statement = output.json
        self._footer = output.footer
        return _table(output, parsed_args)

    def produce_output(self, parsed_args: argparse.Namespace, column_names: Any,
                       data: Any) -> int:
        if parsed_args.formatter == "json":
            # The statement as the API answers it: status, totals per currency, the
            # projects' sections and the manual lines.
            self.app.stdout.write(json.dumps(self._statement, indent=2) + "\n")
            return 0
        code: int = super().produce_output(parsed_args, column_names, data)
        if parsed_args.formatter == "table" and self._footer:
            self.app.stdout.write(self._footer + "\n")
        return code


class ListAccountSummary(_BillingList):
    """List every account's totals of a month, one row per account and currency, with
    the projects of its sections (read role; an account reader gets its own)."""

    fetch = billing.account_summaries

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--period", required=True, metavar="<YYYY-MM>",
                            help="the month (UTC)")
        return parser


ACCOUNT = ("account", "<account>", "the account's id")
CLOUD = ("cloud", "<cloud>", "the cloud's name in Tally")
PERIOD = ("period", "<YYYY-MM>", "the month (UTC)")


class ListAccountLine(_BillingList):
    """List the credits and charges booked by hand on an account (read role)."""

    fetch = billing.account_lines
    positionals = (ACCOUNT,)

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--cloud", metavar="<cloud>", help="only this cloud's lines")
        parser.add_argument("--period", metavar="<YYYY-MM>", help="only this month's lines")
        return parser


class ListAccountCommitment(_BillingList):
    """List an account's minimum commitments, by the month each takes effect (read role)."""

    fetch = billing.account_commitments
    positionals = (ACCOUNT,)


class ListAccountDiscount(_BillingList):
    """List an account's percentage discounts, by the month each takes effect (read role)."""

    fetch = billing.account_discounts
    positionals = (ACCOUNT,)


class ShowPriceList(_BillingList):
    """List a price list's versions, oldest first (read role; CLOUD may be ``default``):
    ``tally price-list show``."""

    fetch = billing.price_list_show
    positionals = (CLOUD,)


class ListPeriod(_BillingList):
    """List a cloud's periods: status, who closed them, the cutoff."""

    fetch = billing.period_list
    positionals = (CLOUD,)


class ExportPeriod(_BillingList):
    """Show the closed statements of a closed period, one row each (read role; the
    export's exact bytes for an invoicing system: ``tally period export``)."""

    fetch = billing.period_export
    positionals = (CLOUD, PERIOD)


class ListDelivery(_BillingList):
    """List the webhook deliveries of a period's close, with their attempts (admin)."""

    fetch = billing.period_deliveries
    positionals = (CLOUD, PERIOD)
