"""The simulated world: generated resources, the virtual clock, truth and faults.

The generated data is immutable; the clock and the fault switches are the only
state, so API threads read without locks and only clock moves are serialised.
"""

from __future__ import annotations

import datetime as dt
import gc
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from mapping.event import parse_timestamp
from simcloud import model, payloads
from simcloud.config import WorldConfig
from simcloud.faults import Faults
from simcloud.generator import generate
from simcloud.model import Resource, rfc3339
from simcloud.publisher import Publication, Publisher, message_id

LOG = logging.getLogger(__name__)

# Each service's default listing order: (key, reverse).
ORDERS: dict[str, tuple[Callable[[Resource], Any], bool]] = {
    "nova": (lambda r: (r.created_at, r.id), True),        # created_at desc, id desc
    "cinder": (lambda r: (r.created_at, r.id), True),      # created_at desc, id desc
    "neutron": (lambda r: r.id, False),                     # id asc
    "glance": (lambda r: (r.created_at, r.id), True),      # created_at desc, id desc
    "octavia": (lambda r: (r.created_at, r.id), False),    # created_at asc, id asc
}
SERVICE_OF = {model.INSTANCE: "nova", model.VOLUME: "cinder", model.FLOATING_IP: "neutron",
              model.IMAGE: "glance", model.LOADBALANCER: "octavia"}


class ClockError(ValueError):
    """A clock move that would go backwards or is not a valid instant."""


class SortedIndex:
    """One type's resources in its service's listing order, with marker positions."""

    def __init__(self, resources: list[Resource], service: str) -> None:
        key, reverse = ORDERS[service]
        self.items = sorted(resources, key=key, reverse=reverse)
        self.position = {r.id: i for i, r in enumerate(self.items)}

    def page(self, visible: Callable[[Resource], bool], marker: str | None,
             limit: int) -> tuple[list[Resource], bool] | None:
        """Up to ``limit`` visible items after ``marker``; None when the marker is unknown.

        The flag says whether the page was cut at ``limit`` (more may follow).
        """
        start = 0
        if marker is not None:
            pos = self.position.get(marker)
            if pos is None:
                return None
            start = pos + 1
        out: list[Resource] = []
        if limit <= 0:
            return out, False
        items = self.items
        for i in range(start, len(items)):
            res = items[i]
            if visible(res):
                out.append(res)
                if len(out) >= limit:
                    return out, True
        return out, False


class World:
    """A generated month of one simulated cloud, with its clock."""

    def __init__(self, config: WorldConfig) -> None:
        began = time.perf_counter()
        self.config = config
        # Generation allocates millions of long-lived objects and no garbage cycles;
        # the collector's repeated full passes over them would make it superlinear.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            generated = generate(config)
            self.projects = generated.projects
            self.admin_project = generated.admin_project
            self.resources = generated.resources
            self._notes = generated.notes
            self.by_id = {r.id: r for r in self.resources}
            self.indexes: dict[str, SortedIndex] = {
                kind: SortedIndex([r for r in self.resources if r.kind == kind], service)
                for kind, service in SERVICE_OF.items()}
        finally:
            if gc_was_enabled:
                gc.enable()
        self.faults = Faults()
        # API views may keep the never-changing parts of their renderings here.
        self.view_cache: dict[str, Any] = {}
        self._start = config.start.timestamp()
        self._clock = self._start
        self._next_note = 0
        self._clock_lock = threading.Lock()
        self._publisher = Publisher(config)
        self.generation_seconds = time.perf_counter() - began
        LOG.info("simulated world: %s resources, %s notifications, generated in %.1fs",
                 len(self.resources), len(self._notes), self.generation_seconds)

    # -- the clock -----------------------------------------------------------------------

    @property
    def now(self) -> float:
        return self._clock

    @property
    def clock(self) -> dt.datetime:
        return model.to_datetime(self._clock)

    def clock_document(self) -> dict[str, Any]:
        return {"at": rfc3339(self._clock), "start": rfc3339(self._start),
                "end": rfc3339(self.config.end.timestamp()),
                "published": self._next_note, "pending": len(self._notes) - self._next_note}

    def advance_to(self, at: dt.datetime | str) -> dict[str, Any]:
        """Move the clock forward to ``at``, publishing everything that happened up to it.

        Events dated exactly ``at`` are included.  Moving to the current instant is a
        no-op; moving backwards raises :class:`ClockError`.  Publishing uses oslo's
        notifier retry default (forever), so while the broker is unreachable the move
        blocks, as a service's notifier does, and nothing is lost.
        """
        target = _instant(at)
        with self._clock_lock:
            if target < self._clock:
                raise ClockError(f"the clock is at {rfc3339(self._clock)} and only moves "
                                 f"forward; {rfc3339(target)} is behind it")
            first = self._next_note
            last = first
            notes = self._notes
            while last < len(notes) and notes[last].at <= target:
                last += 1
            report: dict[str, Any]
            if self._publisher.enabled:
                batch = [self._publication(notes[i]) for i in range(first, last)]
                report = self._publisher.deliver(batch)
            else:  # nobody to publish to: the events still happened
                report = {"generated": last - first, "lost": 0, "duplicated": 0, "sent": 0}
            self._next_note = last
            self._clock = target
        report["at"] = rfc3339(target)
        return report

    def _publication(self, note: Any) -> Publication:
        res = self.resources[note.resource]
        phase = res.phases[note.phase]
        return Publication(
            exchange=payloads.EXCHANGES[res.kind],
            publisher_id=payloads.publisher_id(res),
            event_type=note.event_type,
            payload=payloads.build(res, phase, note.event_type, note.at),
            ctxt=payloads.context(res, phase),
            timestamp=model.to_datetime(note.at).strftime("%Y-%m-%d %H:%M:%S.%f"),
            message_id=message_id(self.config.seed, note.seq),
        )

    def publications(self, until: dt.datetime | str | None = None) -> Iterator[Publication]:
        """Every notification of the world up to ``until`` (default: the end), unfaulted.

        What the services sent, before the broker lost, duplicated or reordered any
        of it; the clock does not move.
        """
        limit = _instant(until) if until is not None else float("inf")
        for note in self._notes:
            if note.at > limit:
                break
            yield self._publication(note)

    # -- the truth ----------------------------------------------------------------------

    def truth(self, at: dt.datetime | str | None = None, resource_type: str | None = None,
              live: bool | None = None) -> list[dict[str, Any]]:
        """Every resource created at or before ``at`` (default: the clock), as of ``at``."""
        t = self._clock if at is None else _instant(at)
        if resource_type is not None and resource_type not in model.RESOURCE_TYPES:
            raise ValueError(f"unknown resource_type {resource_type!r}; one of "
                             f"{', '.join(model.RESOURCE_TYPES)}")
        out = []
        for res in self.resources:
            if res.created_at > t or (resource_type is not None and res.kind != resource_type):
                continue
            record = model.truth_record(res, t)
            if live is not None and record["live"] is not live:
                continue
            out.append(record)
        return out

    def volume_types(self) -> dict[str, str]:
        """Volume type id -> name (notifications carry the id, listings the name)."""
        return {vt.id: vt.name for vt in model.VOLUME_TYPES}

    def close(self) -> None:
        self._publisher.close()


def _instant(value: dt.datetime | str) -> float:
    if isinstance(value, str):
        try:
            return parse_timestamp(value).timestamp()
        except ValueError as exc:
            raise ClockError(str(exc)) from None
    if value.tzinfo is None:
        raise ClockError("instants must be aware datetimes (UTC)")
    return value.timestamp()
