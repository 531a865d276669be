"""CPU time spent by the processes of a benchmark phase, read from ``/proc`` (Linux).

A bench that shares its cores with the server it measures (two cores here) is bound by
the CPU all of them use: these figures say where a phase's time went (the server's
workers, their PostgreSQL backends, the posting client) without a profiler attached.
Where ``/proc`` is absent nothing is measured and the bench says so.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def machine_times() -> tuple[int, int] | None:
    """(busy, total) jiffies of all cores since boot; None where /proc/stat is absent."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:9]]
    except OSError:
        return None
    idle = fields[3] + fields[4]  # idle, iowait
    return sum(fields) - idle, sum(fields)


def process_seconds(pid: int) -> float | None:
    """User plus system CPU seconds of ``pid`` (all its threads); None once it is gone."""
    try:
        return stat_seconds(Path(f"/proc/{pid}/stat").read_text())
    except OSError:
        return None


def stat_seconds(text: str) -> float:
    """User plus system CPU seconds from the text of a ``/proc/<pid>/stat``."""
    # The command name (2nd field) may hold spaces and parentheses: the fields after
    # its last ')' are fixed (utime and stime the 14th and 15th of the whole line).
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def processes_named(fragment: str) -> list[int]:
    """The pids whose command line holds ``fragment`` (gunicorn's workers keep their
    master's command line)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if fragment.encode() in command:
            found.append(int(entry.name))
    return found


class PhaseCpu:
    """CPU seconds per group of processes over the phases measured with ``measure``.

    ``groups`` name a function listing a group's pids, called at each phase's start and
    end: a process that appears during a phase counts from zero; one that ends during
    it adds nothing (its CPU since the start's reading is not seen).  The group
    ``own`` is this process (every thread)."""

    def __init__(self, groups: dict[str, Callable[[], list[int]]]) -> None:
        self.groups = groups
        self.seconds: dict[str, float] = defaultdict(float)
        self._core_jiffies: list[tuple[int, int]] = []  # (busy, total) per phase
        self.available = machine_times() is not None

    def _read(self) -> dict[str, dict[int, float]]:
        readings: dict[str, dict[int, float]] = {}
        for name, pids in self.groups.items():
            readings[name] = {pid: s for pid in pids()
                              if (s := process_seconds(pid)) is not None}
        return readings

    @contextmanager
    def measure(self) -> Iterator[None]:
        if not self.available:
            yield
            return
        before, own, machine = self._read(), time.process_time(), machine_times()
        yield
        after_machine, after_own = machine_times(), time.process_time()
        after = self._read()
        self.seconds["own"] += after_own - own
        for name in self.groups:
            for pid in before[name].keys() | after[name].keys():
                start = before[name].get(pid, 0.0)
                end = after[name].get(pid)
                if end is None:
                    end = process_seconds(pid) or start
                self.seconds[name] += end - start
        if machine is not None and after_machine is not None:
            self._core_jiffies.append((after_machine[0] - machine[0],
                                    after_machine[1] - machine[1]))

    def busy(self) -> float | None:
        """The share of every core's time that was busy over the phases (0-1)."""
        total = sum(t for _, t in self._core_jiffies)
        return sum(b for b, _ in self._core_jiffies) / total if total else None
