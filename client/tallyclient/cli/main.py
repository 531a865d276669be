"""``tally [--url U] [--token-file F | --os-cloud NAME] [--format table|json] COMMAND ...``
(docs/cli.md).

Exit codes: 0 success, 1 an API error or no answer (or a replay left rows
rejected/not found), 2 a usage or configuration error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence

from tallyclient.api_url import ApiUrlError, check_base_url
from tallyclient.cli import billing, commands, keystone, table
from tallyclient.cli.http import MAX_PAGE, ApiClient, ApiError, Unreachable
from tallyclient.cli.pipes import quiet_on_broken_pipe
from tallyclient.token_file import TokenFileError, read_token_file

PROG = "tally"
DEFAULT_URL = "http://127.0.0.1:8779"

Command = Callable[[ApiClient, argparse.Namespace], commands.Output]


class UsageError(Exception):
    """Bad options the parser cannot see (an unreadable token file)."""


def _page_size(text: str) -> int:
    value = int(text)
    if not 1 <= value <= MAX_PAGE:
        raise argparse.ArgumentTypeError(f"must be 1..{MAX_PAGE}")
    return value


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def _list_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=_positive,
                        help="at most N items (default: every page)")
    parser.add_argument("--page-size", type=_page_size, default=MAX_PAGE,
                        help=f"items per request (1..{MAX_PAGE}, default {MAX_PAGE})")


def _resource_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("cloud")
    parser.add_argument("resource_type", metavar="type")
    parser.add_argument("resource_id", metavar="id")
    parser.add_argument("--platform", default="openstack", help="default: openstack")


def _global_options(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """The options every command takes, before or after the command's name.

    Only the main parser holds defaults: a subcommand's copy would overwrite a value
    given before the command with its own default.
    """
    def default(value: object) -> object:
        return value if defaults else argparse.SUPPRESS

    parser.add_argument("--url", default=default(None),
                        help="the Reporting API (env TALLY_URL; with a keystone cloud, "
                        f"default: the catalog's {keystone.SERVICE_TYPE} endpoint; "
                        f"else {DEFAULT_URL})")
    token = parser.add_mutually_exclusive_group()
    token.add_argument("--token-file", default=default(None),
                       help="file whose first line is the bearer token (env TALLY_TOKEN_FILE)")
    token.add_argument("--token", default=default(None),
                       help="the bearer token (env TALLY_TOKEN)")
    token.add_argument("--os-cloud", default=default(None), metavar="NAME",
                       help="authenticate with keystone as this clouds.yaml entry "
                       "(env OS_CLOUD, used when no bearer token is given)")
    parser.add_argument("--format", choices=("table", "json", "csv"), default=default("table"),
                        help="csv: statement, account statement, account summaries and "
                        "period export only")
    parser.add_argument("--timeout", type=float, default=default(30.0),
                        help="seconds to wait for each answer (default 30)")


def build_parser() -> argparse.ArgumentParser:
    # No abbreviations: "usage --to" must never read as the global "--token".
    parser = argparse.ArgumentParser(prog=PROG, description="Query the Tally Reporting API.",
                                     allow_abbrev=False)
    _global_options(parser, defaults=True)
    common = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    _global_options(common, defaults=False)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    inv = sub.add_parser("inventory", parents=[common], allow_abbrev=False,
                         help="resources, current or as of an instant")
    inv.add_argument("--cloud")
    inv.add_argument("--type", dest="resource_type")
    inv.add_argument("--project")
    live = inv.add_mutually_exclusive_group()
    live.add_argument("--live", dest="live", action="store_const", const=True, default=True,
                      help="only live resources (the default)")
    live.add_argument("--deleted", dest="live", action="store_const", const=False,
                      help="only deleted resources")
    live.add_argument("--all", dest="live", action="store_const", const=None,
                      help="live and deleted")
    inv.add_argument("--as-of", metavar="T", help="what was live at instant T (RFC 3339)")
    _list_options(inv)
    inv.set_defaults(handler=commands.inventory)

    hist = sub.add_parser("history", parents=[common], allow_abbrev=False,
                         help="every event of one resource")
    _resource_arguments(hist)
    _list_options(hist)
    hist.set_defaults(handler=commands.history)

    life = sub.add_parser("lifecycle", parents=[common], allow_abbrev=False,
                         help="the live intervals of one resource")
    _resource_arguments(life)
    life.set_defaults(handler=commands.lifecycle)

    use = sub.add_parser("usage", parents=[common], allow_abbrev=False,
                         help="resource-seconds over [FROM, TO)")
    use.add_argument("--from", dest="start", required=True, metavar="T")
    use.add_argument("--to", dest="end", required=True, metavar="T")
    use.add_argument("--cloud")
    use.add_argument("--project")
    use.add_argument("--group-by", choices=sorted(commands.USAGE_KEYS), default="resource")
    use.add_argument("--breakdown", action="store_true",
                     help="one line per state and size (table output)")
    _list_options(use)
    use.set_defaults(handler=commands.usage)

    rej = sub.add_parser("rejected", parents=[common], allow_abbrev=False,
                         help="the dead letter")
    rej.add_argument("--cloud")
    rej.add_argument("--since", metavar="T")
    rej.add_argument("--reason", metavar="PREFIX")
    replayed = rej.add_mutually_exclusive_group()
    replayed.add_argument("--replayed", dest="replayed", action="store_const", const=True,
                          default=None, help="only rows replayed already")
    replayed.add_argument("--not-replayed", dest="replayed", action="store_const", const=False,
                          help="only rows not replayed yet")
    _list_options(rej)
    rej.set_defaults(handler=commands.rejected)

    rep = sub.add_parser("replay", parents=[common], allow_abbrev=False,
                         help="replay rejected events by id (admin)")
    rep.add_argument("ids", nargs="+", type=int, metavar="ID")
    rep.set_defaults(handler=commands.replay)

    runs = sub.add_parser("sync-runs", parents=[common], allow_abbrev=False,
                         help="reconciliation runs, newest first")
    runs.add_argument("--cloud")
    _list_options(runs)
    runs.set_defaults(handler=commands.sync_runs)
    billing.register(sub, common)
    return parser


def _bearer_token(args: argparse.Namespace) -> str | None:
    """An option beats the environment; a token beats a token file."""
    if args.token:
        return str(args.token)
    path = args.token_file
    if not path:
        if os.environ.get("TALLY_TOKEN"):
            return os.environ["TALLY_TOKEN"]
        path = os.environ.get("TALLY_TOKEN_FILE")
    if not path:
        return None
    try:
        return read_token_file(path)
    except TokenFileError as exc:
        raise UsageError(f"token file {exc}") from None


def _base_url(url: str) -> str:
    try:
        return check_base_url("--url (or TALLY_URL)", url)
    except ApiUrlError as exc:
        raise UsageError(str(exc)) from None


def _client(args: argparse.Namespace) -> ApiClient:
    """Options beat the environment: --token, --token-file, --os-cloud, then
    TALLY_TOKEN, TALLY_TOKEN_FILE, OS_CLOUD."""
    url = args.url or os.environ.get("TALLY_URL")
    if url:
        url = _base_url(url)
    cloud = args.os_cloud
    token = None if cloud else _bearer_token(args)
    if token is None and not cloud:
        cloud = os.environ.get("OS_CLOUD")
    if not cloud:
        return ApiClient(url or DEFAULT_URL, token, args.timeout)
    try:
        found = keystone.access(cloud, want_endpoint=url is None, timeout=args.timeout)
    except keystone.CloudConfigError as exc:
        raise UsageError(str(exc)) from None
    except keystone.KeystoneError as exc:
        raise Unreachable(str(exc)) from None
    client = ApiClient(url or str(found.endpoint), None, args.timeout,
                       keystone_token=found.token)
    client.session.verify = found.verify
    return client


def _print(output: commands.Output, fmt: str) -> None:
    if output.text is not None:
        print(output.text, end="")
        return
    if fmt == "json":
        print(json.dumps(output.json, indent=2, ensure_ascii=False))
        return
    print(table.render(output.columns, output.rows))
    if output.footer:
        print(output.footer)


@quiet_on_broken_pipe  # `tally … | head` ends quietly
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    handler: Command = args.handler
    if args.format == "csv" and not getattr(args, "csv_ok", False):
        print(f"{PROG}: --format csv is for the statement, account statement, account "
              "summaries and period export commands", file=sys.stderr)
        return 2
    try:
        client = _client(args)
        output = handler(client, args)
    except (UsageError, commands.UnknownResourceType, billing.DocumentError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
    except ApiError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    except Unreachable as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    _print(output, args.format)
    return output.exit_code


if __name__ == "__main__":
    sys.exit(main())
