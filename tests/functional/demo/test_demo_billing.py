"""The demo bills the simulated month and checks it against the simulated cloud's truth."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path


def test_the_simulated_month_billed_against_the_truth(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "simcloud.demo", "--workdir", str(tmp_path / "demo"),
         "--hours", "6", "--scale", "30", "--loss", "0"],
        capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    found = re.search(r"Statements of (\d{4}-\d{2}) with a demo price list: (\d+) resources "
                      r"billed, total ([0-9.]+) EUR\n  every amount equals an independent "
                      r"rating of Tally's lifecycle: yes; (\d+) resources have the truth's "
                      r"lifecycle and its bill", result.stdout)
    assert found, result.stdout
    billed, same = int(found[2]), int(found[4])
    assert billed > 20 and same > billed // 2
    assert float(found[3]) > 0
