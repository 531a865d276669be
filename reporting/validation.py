"""Validation of incoming items: the event schema, then the registered size schema.

An item either becomes a ``ValidEvent`` (ready to store, timestamps naive UTC, a
volume's type id replaced by its name) or a reason string prefixed
``event_schema:`` / ``size_schema:`` that the dead letter keeps.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import jsonschema
import jsonschema_rs
import orjson
import sqlalchemy as sa
from jsonschema.protocols import Validator
from sqlalchemy.orm import Session

from mapping.event import (
    EVENT_SCHEMA,
    MAX_REASON_LEN,
    PATH_FIELDS,
    ResourceKey,
    TimestampError,
    parse_timestamp,
    route_problem,
    verb,
)
from reporting.db.models import ResourceType, SizeName
from reporting.future import FutureBound
from reporting.schema_patterns import LINEAR, UNRUNNABLE, holds_pattern, pattern_problem
from reporting.schema_refs import OFFLINE_REGISTRY, UNRESOLVABLE, ref_problem
from tally_common.jsontext import dumps_finite

VOLUME_TYPE_KIND = "volume_type"
UNKNOWN_CLOUD = "unknown cloud"


class _SchemaCheck:
    """One schema, checked by jsonschema-rs (fast path: ingest validates up to 1000
    items per request) and explained by jsonschema (the reasons clients read).

    An instance is refused when either validator refuses it: the Rust one follows
    ECMA-262 where Python's ``re`` differs (``$`` also matches before a trailing
    newline), and the Python one takes what the Rust one cannot (integers beyond 64
    bits) and documents the Rust one does not support.

    A size schema (``own=False``) runs its patterns on the linear-time engine only
    (``reporting.schema_patterns``): when it holds one, the Rust validator alone
    decides and explains, since Python's ``re`` backtracks.  The event schema's own
    patterns are linear by construction.
    """

    def __init__(self, schema: dict[str, Any], *, own: bool = False) -> None:
        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        # Offline: a reference is resolved inside the document or not at all.
        self._explain: Validator = cls(schema, registry=OFFLINE_REGISTRY)
        self._python_explains = own or not holds_pattern(schema)
        self._fast: Any
        try:
            self._fast = (jsonschema_rs.validator_for(schema, offline=True) if own else
                          jsonschema_rs.validator_for(schema, offline=True,
                                                      pattern_options=LINEAR))
        except Exception:  # a document the Rust validator does not support
            self._fast = None

    def first_error(self, instance: Any) -> tuple[str, str] | None:
        """``(json pointer, message)`` of the first problem, or None when valid."""
        fast_refuses: Any = None
        if self._fast is not None:
            try:
                if self._fast.is_valid(instance):
                    return None
                fast_refuses = next(iter(self._fast.iter_errors(instance)), None)
            except Exception:  # noqa: S110 - the Python validator decides below
                pass
        if not self._python_explains:
            if fast_refuses is not None:
                return _where(fast_refuses.instance_path), str(fast_refuses.message)
            if self._fast is None:
                return "(root)", UNRUNNABLE
            return "(root)", "the linear-time validator could not check this size"
        try:
            error = jsonschema.exceptions.best_match(self._explain.iter_errors(instance))
        except UNRESOLVABLE as exc:
            return "(root)", f"the schema holds a reference that cannot be resolved: {exc}"
        if error is not None:
            return _where(error.absolute_path), error.message
        if fast_refuses is not None:
            return _where(fast_refuses.instance_path), str(fast_refuses.message)
        return None


_EVENT_CHECK = _SchemaCheck(EVENT_SCHEMA, own=True)


def compiled(schema: dict[str, Any]) -> _SchemaCheck:
    """The check of ``schema``, compiled once per process for each distinct document
    (every request reads the registered schemas; compiling both validators costs
    more than checking a batch against them)."""
    try:
        text = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONEncodeError:  # an integer beyond 64 bits
        text = json.dumps(schema, sort_keys=True)
    return _compiled(text)


@functools.lru_cache(maxsize=64)
def _compiled(text: str) -> _SchemaCheck:
    # From the text, not the caller's dict: the cached check owns its document.
    return _SchemaCheck(json.loads(text))

SchemaKey = tuple[str, str]  # (platform, resource_type)
SizeNameKey = tuple[str, str, str]  # (platform, cloud, size_id) of kind volume_type


class ValidEvent(NamedTuple):
    """An item that passed every check, in the shape the events table stores (a named
    tuple: a batch builds 1000 of them)."""

    event_id: str
    event_type: str
    platform: str
    cloud: str
    resource_type: str
    resource_id: str
    project_id: str
    timestamp: dt.datetime  # naive UTC
    source: str
    payload: dict[str, Any]  # the item's own (sizes renamed in a copy), never changed

    @property
    def resource_key(self) -> ResourceKey:
        return (self.platform, self.cloud, self.resource_type, self.resource_id)

    def row(self, received_at: dt.datetime) -> dict[str, Any]:
        # Field by field, the payload shared (a deep copy would dominate a 1000-event batch).
        return {
            "event_id": self.event_id,
            "event_type": self.event_type,
            "platform": self.platform,
            "cloud": self.cloud,
            "resource_type": self.resource_type,
            "resource_id": self.resource_id,
            "project_id": self.project_id,
            "timestamp": self.timestamp,
            "source": self.source,
            "payload": self.payload,
            "received_at": received_at,
        }


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON_LEN else text[: MAX_REASON_LEN - 3] + "..."


def _where(path: Iterable[Any]) -> str:
    pointer = "/".join(str(part) for part in path)
    return f"/{pointer}" if pointer else "(root)"


# \u0000 as json.dumps writes a NUL: preceded by an even number of backslashes.
_ESCAPED_NUL = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def unstorable(value: Any) -> bool:
    """True when a string or key somewhere holds NUL or a lone surrogate, or a number
    is not finite.

    None of them survives PostgreSQL (text refuses NUL, UTF-8 refuses surrogates,
    JSON has no NaN), so such an item is refused here instead of failing the whole
    batch at write time.  Encoding to JSON does the walk at C speed: a NUL comes out
    as \\u0000, a lone surrogate fails the UTF-8 encoding, a non-finite number is
    refused.
    """
    try:
        text = dumps_finite(value, ensure_ascii=False)
        text.encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # UnicodeEncodeError included
        return True
    return "\\u0000" in text and _ESCAPED_NUL.search(text) is not None


def storable_copy(value: Any) -> Any:
    """``value`` with NUL and lone surrogates replaced, for keeping a refused item."""
    if isinstance(value, str):
        cleaned = value.replace("\x00", "\ufffd")
        return cleaned.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {storable_copy(k): storable_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable_copy(v) for v in value]
    return value


def exact_text(value: Any) -> str | None:
    """``value`` as ASCII JSON text that decodes back to the very same value: NUL and
    lone surrogates come out escaped, so any text column keeps it exactly (None for
    what JSON cannot write, which only a caller inside the API could pass)."""
    try:
        return json.dumps(value, ensure_ascii=True, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError):
        return None


def check_size_schema(document: Any) -> str | None:
    """Why ``document`` is not a usable JSON Schema for sizes, or None when it is."""
    if not isinstance(document, dict):
        return "a size schema must be a JSON object"
    try:
        cls = jsonschema.validators.validator_for(document, default=jsonschema.Draft202012Validator)
        cls.check_schema(document)
    except jsonschema.SchemaError as exc:
        return _clip(f"{_where(exc.absolute_path)}: {exc.message}")
    problem = ref_problem(document) or pattern_problem(document)
    return None if problem is None else _clip(problem)


class ItemValidator:
    """Validates items against the event schema and the registered size schemas."""

    def __init__(
        self,
        size_schemas: Mapping[SchemaKey, dict[str, Any]],
        size_names: Mapping[SizeNameKey, str],
        *,
        require_size_schema: bool,
        known_clouds: frozenset[str] | None = None,
        future: Mapping[str, FutureBound | None] | None = None,
    ) -> None:
        self._schemas = dict(size_schemas)
        # The latest instant each cloud's events may carry (None: not bounded).
        self._future = future or {}
        # None: any cloud (the API has no clouds file); else the clouds it names.
        self._clouds = known_clouds
        self._names = dict(size_names)
        self._require = require_size_schema
        self._checks: dict[SchemaKey, _SchemaCheck] = {}
        self._size_reasons: dict[tuple[SchemaKey, bytes], str | None] = {}

    def check_all(self, items: Sequence[Any]) -> list[ValidEvent | str]:
        """``check`` of every item; one walk of the batch rules out unstorable strings
        for all of them in the common case."""
        batch_storable = not unstorable(list(items))
        return [self.check(item, known_storable=batch_storable) for item in items]

    def _size_check(self, key: SchemaKey) -> _SchemaCheck:
        if key not in self._checks:
            self._checks[key] = compiled(self._schemas[key])
        return self._checks[key]

    def check(self, item: Any, *, known_storable: bool = False) -> ValidEvent | str:
        """The stored form of ``item``, or the reason it is refused.

        ``known_storable``: the caller has found ``item`` free of what no column
        stores (``unstorable``), so that walk is not repeated."""
        error = _EVENT_CHECK.first_error(item)
        if error is not None:
            return _clip(f"event_schema: {error[0]}: {error[1]}")
        if not known_storable and unstorable(item):
            return ("event_schema: a string holds NUL or an unpaired surrogate, "
                    "or a number is not finite")
        for field in PATH_FIELDS:
            problem = route_problem(item[field])
            if problem is not None:
                return f"event_schema: /{field}: {problem}"
        if self._clouds is not None and item["cloud"] not in self._clouds:
            return _clip(f"{UNKNOWN_CLOUD}: the clouds file names no cloud {item['cloud']!r} "
                         "(a typo books every resource twice); add it, restart, and replay")
        timestamp = _naive_utc(item["timestamp"])
        if isinstance(timestamp, str):
            return timestamp
        bound = self._future.get(item["cloud"])
        if bound is not None and timestamp > bound.latest:
            return _clip(bound.reason(timestamp))
        if item["project_id"] == "" and verb(item["event_type"]) != "delete":
            return "event_schema: /project_id: may be empty only on a delete"
        payload = item["payload"]
        if "size" in payload:
            size = self._named_size(item, payload["size"])
            if size is not payload["size"]:
                payload = {**payload, "size": size}
            reason = self._size_reason(item["platform"], item["resource_type"], size)
            if reason is not None:
                return reason
        return ValidEvent(item["event_id"], item["event_type"], item["platform"], item["cloud"],
                          item["resource_type"], item["resource_id"], item["project_id"],
                          timestamp, item["source"], payload)

    def _named_size(self, item: Mapping[str, Any], size: dict[str, Any]) -> dict[str, Any]:
        type_id = size.get("type")
        if item["resource_type"] != "volume" or not isinstance(type_id, str):
            return size
        name = self._names.get((item["platform"], item["cloud"], type_id))
        return size if name is None else {**size, "type": name}

    def _size_reason(self, platform: str, resource_type: str, size: Any) -> str | None:
        key = (platform, resource_type)
        if key not in self._schemas:
            if self._require:
                return f"size_schema: no size schema is registered for {platform}/{resource_type}"
            return None
        # A batch carries a handful of distinct sizes (flavors): each is checked once.
        shape = _shape(size)
        if shape is not None and (key, shape) in self._size_reasons:
            return self._size_reasons[(key, shape)]
        error = self._size_check(key).first_error(size)
        reason = None if error is None else _clip(
            f"size_schema: {platform}/{resource_type}: {error[0]}: {error[1]}")
        if shape is not None:
            self._size_reasons[(key, shape)] = reason
        return reason


def _shape(size: Any) -> bytes | None:
    """A text naming ``size`` exactly (1, 1.0 and true differ), or None when orjson
    cannot write it (an integer beyond 64 bits: checked every time)."""
    try:
        return orjson.dumps(size)
    except orjson.JSONEncodeError:
        return None


_fromisoformat = dt.datetime.fromisoformat


def _naive_utc(value: str) -> dt.datetime | str:
    """The instant of a timestamp the event schema's pattern accepted, as naive UTC, or
    the reason it is refused (``parse_timestamp``'s).

    The common form (``...T...Z``) is UTC already: ``fromisoformat`` of the text before
    the ``Z`` is exactly what ``parse_timestamp`` answers, at a tenth of its cost; an
    impossible date there, and every other form, goes through ``parse_timestamp``."""
    if value[-1:] == "Z" and "T" in value:
        try:
            return _fromisoformat(value[:-1])
        except ValueError:
            pass
    try:
        return parse_timestamp(value).replace(tzinfo=None)
    except TimestampError as exc:
        return _clip(f"event_schema: /timestamp: {exc}")


def item_instant(item: Any) -> dt.datetime | None:
    """The instant of an item's timestamp (naive UTC), None when it has none to read
    (the checks refuse such an item later)."""
    value = item.get("timestamp") if isinstance(item, dict) else None
    if not isinstance(value, str) or len(value) > 64:
        return None
    instant = _naive_utc(value)
    return instant if isinstance(instant, dt.datetime) else None


def load_validator(
    session: Session, items: Sequence[Any], *, require_size_schema: bool,
    known_clouds: frozenset[str] | None = None,
    future: Mapping[str, FutureBound | None] | None = None,
) -> ItemValidator:
    """An ItemValidator holding the registered schemas and the size names ``items`` need."""
    rt = ResourceType
    schemas = {
        (platform, resource_type): schema for platform, resource_type, schema in
        session.execute(sa.select(rt.platform, rt.resource_type, rt.size_schema))
    }
    return ItemValidator(
        schemas, _size_names(session, items), require_size_schema=require_size_schema,
        known_clouds=known_clouds, future=future,
    )


def _size_names(session: Session, items: Iterable[Any]) -> dict[SizeNameKey, str]:
    wanted: set[SizeNameKey] = set()
    for item in items:
        try:
            if item["resource_type"] == "volume":
                type_id = item["payload"]["size"]["type"]
                # Only ids a size_names row can hold; the item is checked later anyway.
                if isinstance(type_id, str) and len(type_id) <= 255 and not unstorable(type_id):
                    wanted.add((str(item["platform"]), str(item["cloud"]), type_id))
        except (KeyError, TypeError, IndexError):
            continue
    if not wanted:
        return {}
    rows = session.execute(
        sa.select(SizeName.platform, SizeName.cloud, SizeName.size_id, SizeName.name).where(
            SizeName.kind == VOLUME_TYPE_KIND,
            SizeName.size_id.in_(sorted({key[2] for key in wanted})),
        )
    )
    return {(p, c, i): n for p, c, i, n in rows if (p, c, i) in wanted}
