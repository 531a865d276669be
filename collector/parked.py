"""Operate on the collector's parked store (``<buffer_dir>/parked``).

    python -m collector.parked --buffer-dir DIR list
    python -m collector.parked --buffer-dir DIR requeue

``list`` prints one JSON line per parked item (key, reason, what it holds).
``requeue`` moves every parked *event* back into the buffer, to be delivered by the
next collector run; a parked raw notification (one that could not be mapped or
serialised) stays where it is and is reported.  Run it with the collector stopped:
the buffer directory is locked while a collector uses it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from collector.buffer import EventBuffer
from collector.errors import ConfigurationError


def parked_event(record: dict[str, Any]) -> str | None:
    """The event JSON a parked record holds, or None for a raw notification."""
    if isinstance(record.get("event"), str):
        return str(record["event"])
    notification = record.get("notification")
    if isinstance(notification, dict) and isinstance(notification.get("event"), str):
        return str(notification["event"])
    return None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m collector.parked", description=__doc__)
    parser.add_argument("--buffer-dir", required=True, help="the collector's [collector] buffer_dir")
    parser.add_argument("action", choices=["list", "requeue"])
    args = parser.parse_args(argv)
    try:
        buffer = EventBuffer(args.buffer_dir, max_items=2**62)
    except ConfigurationError as exc:
        print(f"collector.parked: {exc}", file=sys.stderr)
        return 2
    try:
        entries = buffer.parked_entries()
        if args.action == "list":
            for key, record in entries:
                kind = "event" if parked_event(record) is not None else "notification"
                print(json.dumps({"key": key, "reason": record.get("reason"), "kind": kind,
                                  "record": record}, sort_keys=True))
            return 0
        moved = kept = 0
        for key, record in entries:
            event = parked_event(record)
            if event is None:
                kept += 1
                continue
            buffer.append([event])     # a crash between the two leaves a harmless duplicate
            buffer.drop_parked(key)
            moved += 1
        print(f"requeued {moved} parked events; {kept} raw notifications stay parked")
        return 0
    finally:
        buffer.close()


if __name__ == "__main__":
    sys.exit(main())
