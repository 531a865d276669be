"""One function per subcommand: ask the API, answer what to print.

Each returns an ``Output``: the JSON value ``--format json`` prints and the table
``--format table`` prints.  They never print themselves, so main() owns stdout.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from tallyclient.cli import table
from tallyclient.cli.http import ApiClient, ApiError


@dataclass
class Output:
    json: Any
    columns: list[table.Column]
    rows: list[dict[str, Any]]
    # A line printed under the table (counts of a replay).
    footer: str | None = None
    exit_code: int = 0
    # Printed as is instead of the table or JSON (CSV).
    text: str | None = None


def _resource_path(args: argparse.Namespace) -> str:
    members = (args.platform, args.cloud, args.resource_type, args.resource_id)
    return "/v1/resources/" + "/".join(quote(member, safe="") for member in members)


def _flag(value: bool | None) -> str | None:
    return None if value is None else ("true" if value else "false")


RESOURCE_COLUMNS = [table.field(name) for name in (
    "platform", "cloud", "resource_type", "resource_id", "project_id", "state",
)] + [table.field("live"), table.field("size"),
      table.field("created_at"), table.field("deleted_at")]


class UnknownResourceType(Exception):
    """A --type that names no registered resource type and matches nothing (a typo)."""


def _check_resource_type(client: ApiClient, resource_type: str) -> None:
    """An empty answer for a type the API does not know is a typo, not an empty cloud.
    A caller whose role may not read the type list (a project reader) gets the API's
    own answer: the check is the CLI's courtesy, never a call the role cannot make."""
    try:
        rows = client.pages("/v1/resource-types", {}, None)
    except ApiError as exc:
        if exc.status == 403:
            return
        raise
    known = sorted({str(row.get("resource_type")) for row in rows})
    if resource_type not in known:
        raise UnknownResourceType(f"--type {resource_type!r} is not a resource type the "
                                  f"Reporting API knows ({', '.join(known)})")


def inventory(client: ApiClient, args: argparse.Namespace) -> Output:
    params = {"cloud": args.cloud, "resource_type": args.resource_type,
              "project_id": args.project, "live": _flag(args.live), "as_of": args.as_of}
    items = client.pages("/v1/resources", params, args.limit, args.page_size)
    if not items and args.resource_type:
        _check_resource_type(client, args.resource_type)
    return Output(items, RESOURCE_COLUMNS, items)


def resource(client: ApiClient, args: argparse.Namespace) -> Output:
    row = client.get(_resource_path(args))
    return Output(row, RESOURCE_COLUMNS, [row])


def _provider_event_type(row: Mapping[str, Any]) -> Any:
    """The OpenStack notification a collector event came from (none for a correction)."""
    provider = (row.get("payload") or {}).get("provider")
    return provider.get("oslo_event_type") if isinstance(provider, dict) else None


def history(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages(_resource_path(args) + "/events", {}, args.limit, args.page_size)
    columns = [table.field("timestamp"), table.field("event_type"), table.field("source"),
               table.field("project_id"), ("state", lambda row: row["payload"].get("state")),
               ("size", lambda row: row["payload"].get("size")),
               table.field("received_at"), table.field("event_id"),
               ("openstack_event_type", _provider_event_type)]
    return Output(items, columns, items)


def lifecycle(client: ApiClient, args: argparse.Namespace) -> Output:
    intervals = client.get(_resource_path(args) + "/lifecycle")["intervals"]
    columns = [table.field(name) for name in ("start", "end", "project_id", "state", "size",
                                               "event_id")]
    return Output(intervals, columns, intervals)


USAGE_KEYS = {
    "resource": ("platform", "cloud", "resource_type", "resource_id", "project_id"),
    "project": ("platform", "cloud", "project_id", "resource_type"),
    "resource_type": ("platform", "cloud", "resource_type"),
}


def usage(client: ApiClient, args: argparse.Namespace) -> Output:
    params = {"from": args.start, "to": args.end, "cloud": args.cloud,
              "project_id": args.project, "group_by": args.group_by}
    items = client.pages("/v1/usage", params, args.limit, args.page_size)
    keys = [table.field(name) for name in USAGE_KEYS[args.group_by]]
    if not args.breakdown:
        columns = [*keys, table.field("resources"), table.field("seconds")]
        return Output(items, columns, items)
    # One line per (item, state, size): what a bill is priced from.
    rows = [{**item, **part} for item in items for part in item["breakdown"]]
    columns = [*keys, table.field("state"), table.field("size"), table.field("seconds")]
    return Output(items, columns, rows)


REJECTED_COLUMNS = [table.field(name) for name in (
    "id", "received_at", "cloud", "event_id", "replayed_at", "reason")]


def rejected(client: ApiClient, args: argparse.Namespace) -> Output:
    params = {"cloud": args.cloud, "since": args.since, "reason": args.reason,
              "replayed": _flag(args.replayed)}
    items = client.pages("/v1/rejected-events", params, args.limit, args.page_size)
    return Output(items, REJECTED_COLUMNS, items)


REPLAY_COUNTS = ("stored", "duplicate", "rejected", "not_found", "already_replayed")


def replay(client: ApiClient, args: argparse.Namespace) -> Output:
    body = client.post("/v1/rejected-events/replay", {"ids": args.ids})
    columns = [table.field(name) for name in ("id", "status", "event_id", "reason")]
    footer = ", ".join(f"{name} {body.get(name, 0)}" for name in REPLAY_COUNTS)
    # A row that still fails or does not exist is something the operator must look at.
    failed = body.get("rejected", 0) or body.get("not_found", 0)
    return Output(body, columns, body["results"], footer, 1 if failed else 0)


def _run_stats(row: Mapping[str, Any]) -> dict[str, Any]:
    stats = row.get("stats") or {}
    return {name: stats.get(name)
            for name in ("created", "restated", "updated", "deleted", "error_count")
            if name in stats}


def _run_errors(row: Mapping[str, Any]) -> str | None:
    """A failed run's reasons, one after another (what an operator acts on)."""
    errors = (row.get("stats") or {}).get("errors") or []
    return "; ".join(" ".join(str(error).split()) for error in errors) or None


def sync_runs(client: ApiClient, args: argparse.Namespace) -> Output:
    items = client.pages("/v1/sync-runs", {"cloud": args.cloud}, args.limit, args.page_size)
    columns = [table.field(name) for name in ("id", "cloud", "status", "started_at",
                                               "completed_at")] + [("stats", _run_stats),
                                                                   ("errors", _run_errors)]
    return Output(items, columns, items)
