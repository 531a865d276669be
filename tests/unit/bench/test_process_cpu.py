"""The benches' CPU accounting from /proc (bench/process_cpu.py)."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from bench.process_cpu import CLOCK_TICKS, PhaseCpu, process_seconds, processes_named, stat_seconds

# A child that burns ``seconds`` of CPU, says so on stdout and waits for stdin to close.
BURNER = ("import sys, time\nend = time.process_time() + float(sys.argv[1])\n"
          "while time.process_time() < end: pass\nprint('done', flush=True)\nsys.stdin.read()\n")


def _burner(seconds: float, marker: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", BURNER, str(seconds), marker],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def test_utime_and_stime_are_read_after_a_command_name_with_spaces_and_parentheses():
    fields = ["S"] + ["7"] * 10 + ["250", "150"] + ["9"] * 30
    assert stat_seconds(f"4242 (odd (name) x) {' '.join(fields)}\n") == pytest.approx(
        400 / CLOCK_TICKS)


def test_a_gone_process_reads_none():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert process_seconds(child.pid) is None


def test_a_phase_counts_a_named_process_and_its_own_cpu():
    marker = f"tally-cpu-probe-{uuid.uuid4().hex}"
    child = _burner(0.4, marker)
    try:
        assert processes_named(marker) == [child.pid]
        meter = PhaseCpu({"child": lambda: processes_named(marker)})
        with meter.measure():
            end = time.process_time() + 0.2
            while time.process_time() < end:
                pass
            assert child.stdout is not None and child.stdout.readline() == "done\n"
        assert meter.seconds["own"] >= 0.2
        # What the child burnt before the phase began (its start-up) is not counted.
        assert 0.3 <= meter.seconds["child"] <= 0.6
        busy = meter.busy()
        assert busy is not None and 0 < busy <= 1
    finally:
        child.communicate("")


def test_a_process_started_during_a_phase_counts_from_zero():
    marker = f"tally-cpu-probe-{uuid.uuid4().hex}"
    meter = PhaseCpu({"child": lambda: processes_named(marker)})
    with meter.measure():
        child = _burner(0.3, marker)
        assert child.stdout is not None and child.stdout.readline() == "done\n"
    child.communicate("")
    assert meter.seconds["child"] >= 0.25
