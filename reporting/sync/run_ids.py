"""Sync run ids that sort in the order the runs were recorded.

Runs list newest first by the instant they were told, then by id.  Runs told the
same instant (a repeated ``--at``, two clouds' timers firing together) must still
come out in one order, the order they started: the id is a UUID version 7, whose
first 48 bits are the wall-clock milliseconds, followed by a per-process counter
(so two runs of one process in the same millisecond stay ordered) and random bits.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

_LOCK = threading.Lock()
_LAST = [0, 0]  # [milliseconds, counter] of the last id this process made


def new_run_id() -> str:
    with _LOCK:
        millis = time.time_ns() // 1_000_000
        if millis <= _LAST[0]:
            millis, counter = _LAST[0], _LAST[1] + 1
        else:
            counter = 0
        if counter > 0xFFF:  # 4096 ids in one millisecond: borrow the next one
            millis, counter = millis + 1, 0
        _LAST[:] = [millis, counter]
    random_bits = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
    value = (millis << 80) | (0x7 << 76) | (counter << 64) | (0b10 << 62) | random_bits
    return str(uuid.UUID(int=value))
