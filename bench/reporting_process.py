"""A tally-reporting process of a benchmark run, from a configuration file, stopped
when the run ends."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def running_reporting(config: Path, log: Path, *, stop_timeout_s: float = 60) -> Iterator[str]:
    """Serve ``config`` (gunicorn inside, ``[api] bind = 127.0.0.1:0``); yields the base
    URL once gunicorn listens and its workers had a second to boot."""
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "reporting.cmd.serve", "--config-file", str(config)],
            stdout=sink, stderr=subprocess.STDOUT,
        )
    try:
        for _ in range(600):
            found = re.search(rb"Listening at: (http://[\d.]+:\d+)", log.read_bytes())
            if found:
                break
            if process.poll() is not None:
                raise SystemExit(f"tally-reporting exited: {log.read_text()}")
            time.sleep(0.1)
        else:
            raise SystemExit("tally-reporting did not start")
        time.sleep(1.0)  # let the workers boot
        yield found.group(1).decode()
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=stop_timeout_s)
