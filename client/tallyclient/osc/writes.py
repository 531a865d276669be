"""The billing writes of ``tally`` as ``openstack tally`` commands (admin): ``account
create``, ``account membership create``, ``account line create|reverse``, ``account
commitment create``, ``account discount create``, ``period close``, ``delivery
redeliver`` and ``price list create``.

Each sends the request ``tally``'s own function sends (``tallyclient.cli.billing``:
amounts, minimums and percents as typed, never a float) and shows what the API
answers, one field a row, with the columns ``tally`` prints; a refusal of the API is
one line and exit 1, as in the reads.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, ClassVar

from cliff.show import ShowOne
from osc_lib import exceptions

from tallyclient.cli import billing, commands
from tallyclient.cli.http import ApiClient
from tallyclient.osc.billing import ACCOUNT, CLOUD, PERIOD, _table
from tallyclient.osc.v1 import _ask, _TallyCommand

MONTH_START = "<RFC3339>"


class _BillingWrite(_TallyCommand, ShowOne):
    """A write sent with one of ``tally``'s billing functions; the stored object shown."""

    # A class attribute, read through the class: the function is not bound to self.
    send: ClassVar[Callable[[ApiClient, argparse.Namespace], commands.Output]]
    # The command's positional arguments: (name, metavar, help).
    positionals: ClassVar[tuple[tuple[str, str, str], ...]] = (ACCOUNT,)

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        for name, metavar, text in type(self).positionals:
            parser.add_argument(name, metavar=metavar, help=text)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        names, rows = _table(_ask(type(self).send, self.client(), parsed_args), parsed_args)
        return names, rows[0]


class CreateAccount(_BillingWrite):
    """Create a billing account (admin)."""

    send = billing.account_add

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--description", default="", metavar="<description>")
        return parser


class CreateAccountMembership(_BillingWrite):
    """Put a cloud's project in an account from an instant on (admin)."""

    send = billing.account_join

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--cloud", required=True, metavar="<cloud>")
        parser.add_argument("--project", required=True, metavar="<project-id>")
        parser.add_argument("--effective-from", required=True, metavar=MONTH_START,
                            help="the instant it belongs to the account from, e.g. "
                            "2026-10-15T00:00:00Z")
        return parser


class CreateAccountLine(_BillingWrite):
    """Book a credit (it reduces the total) or a charge (it adds to it) on an
    account's open period of a cloud (admin)."""

    send = billing.account_book

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--kind", required=True, choices=("credit", "charge"))
        parser.add_argument("--cloud", required=True, metavar="<cloud>")
        parser.add_argument("--period", required=True, metavar="<YYYY-MM>")
        parser.add_argument("--amount", required=True, metavar="<amount>",
                            help="a positive decimal in the period's currency, e.g. 12.50")
        parser.add_argument("--reason", required=True, metavar="<reason>")
        parser.add_argument("--effective-at", dest="at", required=True, metavar=MONTH_START,
                            help="the instant it takes effect, inside the period")
        parser.add_argument("--project", metavar="<project-id>",
                            help="the project of the account it concerns")
        return parser


class ReverseAccountLine(_BillingWrite):
    """Reverse a credit or charge by a line of the opposite kind (admin); lines are
    never edited or removed."""

    send = billing.account_reverse

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("line", type=billing.positive_line, metavar="<line>",
                            help="the number of the line to reverse")
        parser.add_argument("--reason", required=True, metavar="<reason>")
        parser.add_argument("--period", metavar="<YYYY-MM>",
                            help="the open period to book it on (default: the line's)")
        parser.add_argument("--effective-at", dest="at", metavar=MONTH_START,
                            help="the instant it takes effect (default: the line's, when "
                            "booked on the line's period)")
        return parser


class CreateAccountCommitment(_BillingWrite):
    """Set a minimum each period of an account bills, from a month's start on, until
    the next commitment (admin); a minimum of 0 ends it."""

    send = billing.account_commit

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--effective-from", required=True, metavar=MONTH_START,
                            help="the month's start it applies from, e.g. "
                            "2026-11-01T00:00:00Z")
        parser.add_argument("--currency", required=True, metavar="<currency>",
                            help="an ISO 4217 code, e.g. EUR")
        parser.add_argument("--minimum", required=True, metavar="<amount>",
                            help="a non-negative decimal in the currency, e.g. 100.00")
        return parser


class CreateAccountDiscount(_BillingWrite):
    """Set a percent off each period's usage of an account, from a month's start on,
    until the next discount (admin); a percent of 0 ends it."""

    send = billing.account_discount

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--effective-from", required=True, metavar=MONTH_START,
                            help="the month's start it applies from, e.g. "
                            "2026-11-01T00:00:00Z")
        parser.add_argument("--percent", required=True, metavar="<percent>",
                            help="a decimal from 0 to 100 with at most 2 decimals, e.g. 12.5")
        parser.add_argument("--reason", required=True, metavar="<reason>",
                            help="why (1 to 1000 characters)")
        return parser


class ClosePeriod(_BillingWrite):
    """Close a cloud's period: freeze every statement of it (admin)."""

    send = billing.period_close
    positionals = (CLOUD, PERIOD)

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("--accept-unrated-lines", dest="accept_unrated",
                            action="store_true",
                            help="close although some lines are unrated: they are never "
                            "billed (recorded on the period)")
        parser.add_argument("--accept-partial-history", action="store_true",
                            help="close although the cloud's history began inside the "
                            "period: before it only surviving resources are known "
                            "(recorded)")
        return parser


class RedeliverDelivery(_BillingWrite):
    """Post a webhook delivery of a close again, for a new round of attempts (admin)."""

    send = billing.period_redeliver
    positionals = (CLOUD, PERIOD,
                   ("delivery", "<delivery-id>", "the delivery's id (delivery list)"))


class CreatePriceList(_BillingWrite):
    """Add a price list version of a cloud (or default) from a YAML or JSON file, its
    numbers sent as the text they are written as (admin)."""

    send = billing.price_list_put
    positionals = (("cloud", "<cloud>", "a cloud, or default"),
                   ("file", "<file>", "the price list document, YAML or JSON (.json)"))

    def take_action(self, parsed_args: argparse.Namespace) -> tuple[Any, Any]:
        try:
            return super().take_action(parsed_args)
        except billing.DocumentError as exc:
            raise exceptions.CommandError(str(exc)) from None
