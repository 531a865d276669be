"""The shape of an OpenStack API answer, to compare real nova's with the simulated cloud's.

A shape keeps what a client relies on and drops the values that differ between two
clouds by nature (ids, names, hosts, instants): member sets, JSON types, the format of
instants (digits replaced by ``d``) and the form of links (host and ids replaced).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")
_ORIGIN = re.compile(r"^https?://[^/]+")
_FLAVOR = re.compile(r"/flavors/[^/?]+")


def shape(value: Any) -> Any:
    """A value's shape: dicts keep their keys, lists their items' shapes (deduplicated),
    strings become ``str`` unless they are instants (their format) or links (below)."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in sorted(value.items())}
    if isinstance(value, list):
        shapes: list[Any] = []
        for item in value:
            if shape(item) not in shapes:
                shapes.append(shape(item))
        return shapes
    if isinstance(value, str):
        if _INSTANT.match(value):
            return "instant " + re.sub(r"\d", "d", value)
        return "str"
    if value is None:
        return None
    return type(value).__name__


def link(href: str, base: str) -> str:
    """A link with the service's own base (scheme, host, port, prefix) and ids replaced."""
    if href.startswith(base):
        href = "<base>" + href[len(base):]
    else:
        href = _ORIGIN.sub("<origin>", href)
    href = _FLAVOR.sub("/flavors/<flavor>", href)
    return _UUID.sub("<id>", href)


def differences(real: Any, sim: Any, where: str = "") -> list[str]:
    """Where two shapes differ, one line each: ``path: real ... | simulated ...``."""
    if isinstance(real, dict) and isinstance(sim, dict):
        out = []
        for key in sorted(set(real) | set(sim)):
            here = f"{where}.{key}" if where else str(key)
            if key not in sim:
                out.append(f"{here}: real {real[key]!r} | simulated: absent")
            elif key not in real:
                out.append(f"{here}: real: absent | simulated {sim[key]!r}")
            else:
                out.extend(differences(real[key], sim[key], here))
        return out
    if isinstance(real, list) and isinstance(sim, list) and len(real) == len(sim):
        return [line for i, (a, b) in enumerate(zip(real, sim, strict=True))
                for line in differences(a, b, f"{where}[{i}]")]
    return [] if real == sim else [f"{where}: real {real!r} | simulated {sim!r}"]


def by_status(body: dict[str, Any], base: str) -> dict[str, Any]:
    """Each status's server shapes (one shape when the servers agree) and link forms."""
    found: dict[str, list[Any]] = {}
    for server in body["servers"]:
        entry = {"shape": shape(server),
                 "links": sorted(link(item["href"], base) for item in server["links"]),
                 "flavor links": sorted(link(item["href"], base)
                                        for item in server["flavor"].get("links", [])),
                 "image links": sorted(link(item["href"], base)
                                       for item in server["image"].get("links", []))
                 if isinstance(server["image"], dict) else []}
        if entry not in found.setdefault(server["status"], []):
            found[server["status"]].append(entry)
    return found


def next_link(body: dict[str, Any], base: str) -> tuple[str, list[tuple[str, str]]]:
    [only] = body["servers_links"]
    assert only["rel"] == "next"
    parts = urlsplit(only["href"])
    query = sorted((k, "<id>" if k == "marker" else v) for k, v in parse_qsl(parts.query))
    return link(f"{parts.scheme}://{parts.netloc}{parts.path}", base), query


def listing_differences(real: dict[str, Any], real_base: str, sim: dict[str, Any],
                        sim_base: str) -> list[str]:
    """What a simulated ``servers/detail`` answer lacks or has more than a real one, for
    each status real nova listed (one line each; none when they agree)."""
    real_by = by_status(real, real_base)
    sim_by = by_status(sim, sim_base)
    out = [] if real_by else ["real nova listed no server"]
    for status, entries in real_by.items():
        if status not in sim_by:
            out.append(f"{status}: the simulated cloud lists no such server")
            continue
        out.extend(f"{status} {line}" for line in differences(entries, sim_by[status]))
    if set(real) != set(sim):
        out.append(f"members: real {sorted(real)} | simulated {sorted(sim)}")
    return out


def version_links(body: dict[str, Any], base: str) -> list[Any]:
    """A version document's (or list's) ids, statuses, versions and link forms."""
    versions = body["versions"] if "versions" in body else [body["version"]]
    return [(v["id"], v["status"], v["version"], v["min_version"],
             [(item["rel"], link(item["href"], base)) for item in v["links"]])
            for v in versions]
