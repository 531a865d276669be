"""Operate on the collector's parked store (``<buffer_dir>/parked``), running or not.

    python -m collector.parked --buffer-dir DIR list
    python -m collector.parked --buffer-dir DIR requeue [--wait SECONDS]

``list`` prints one JSON line per parked item (key, parked_id, reason, what it holds,
whether a requeue is pending).  A running collector files parked items in the
Reporting API's dead letter by itself; what stays here is what the API has not filed
yet (it did not answer, or refused to file the item).

``requeue`` puts every parked *event* back into the buffer, to be delivered again; a
parked raw notification (one that could not be mapped or serialised) stays where it
is and is reported.  With the collector stopped the command moves the events itself
(it holds the buffer's lock meanwhile).  While a collector runs it owns the buffer, so
the command marks the records instead and waits up to ``--wait`` seconds while the
collector moves them; a record filed in the dead letter meanwhile is no longer here
to requeue (replay it from the dead letter).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

from collector.buffer import BufferInUse, EventBuffer
from collector.errors import ConfigurationError
from collector.parked_store import ParkedStore

_POLL_S = 0.2


def _list(store: ParkedStore) -> int:
    for item in store.items():
        kind = "event" if item.event is not None else "notification"
        print(json.dumps({"key": item.key, "parked_id": item.parked_id, "reason": item.reason,
                          "kind": kind, "requeue_requested": item.requeue_requested,
                          "record": item.record}, sort_keys=True))
    return 0


def _requeue_stopped(buffer: EventBuffer) -> int:
    moved = kept = 0
    for item in list(buffer.parked.items()):
        event = item.event
        if event is None:
            kept += 1
            continue
        buffer.append([event])  # a crash between the two leaves a harmless duplicate
        buffer.parked.drop(item.key)
        moved += 1
    print(f"requeued {moved} parked events; {kept} raw notifications stay parked")
    return 0


def _requeue_running(store: ParkedStore, wait_s: float) -> int:
    marked: set[int] = set()
    kept = 0
    for item in list(store.items()):
        if item.event is None:
            kept += 1
        elif store.mark_requeue(item):
            marked.add(item.key)
    deadline = time.monotonic() + wait_s
    while True:
        left = marked & {item.key for item in store.items()}
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(_POLL_S)
    print(f"a collector runs on this buffer: marked {len(marked)} parked events for requeue, "
          f"{len(marked) - len(left)} moved into the buffer by it; {kept} raw notifications "
          "stay parked")
    if left:
        print(f"{len(left)} marked events are not moved yet: the collector moves them while "
              "it runs (or at its next start)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m collector.parked", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--buffer-dir", required=True, help="the collector's [collector] buffer_dir")
    parser.add_argument("--wait", type=float, default=30.0,
                        help="requeue beside a running collector: seconds to wait while it "
                        "moves the events (default 30)")
    parser.add_argument("action", choices=["list", "requeue"])
    args = parser.parse_args(argv)
    parked_dir = os.path.join(args.buffer_dir, "parked")
    if not os.path.isdir(parked_dir):
        print(f"collector.parked: {args.buffer_dir!r} holds no parked store "
              "(is it the collector's [collector] buffer_dir?)", file=sys.stderr)
        return 2
    if args.action == "requeue":
        try:
            buffer = EventBuffer(args.buffer_dir, max_items=2**62)
        except BufferInUse:
            pass  # a collector runs: it moves the events itself
        except ConfigurationError as exc:
            print(f"collector.parked: {exc}", file=sys.stderr)
            return 2
        else:
            try:
                return _requeue_stopped(buffer)
            finally:
                buffer.close()
    store = ParkedStore(parked_dir, sync=None)  # the collector's own setting stays
    try:
        return _list(store) if args.action == "list" else _requeue_running(store, args.wait)
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
