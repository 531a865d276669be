"""gunicorn's worker timeout holds the whole process, so it must outlast the longest
route, the synchronous sync (``[sync] budget_s`` + 15 s); a configuration where it
does not is refused at start, naming both options."""

from __future__ import annotations

from pathlib import Path

import pytest

from reporting.cmd import serve


def _write(tmp_path: Path, api: str = "", sync: str = "") -> str:
    path = tmp_path / "tally.conf"
    path.write_text(f"[database]\nconnection = sqlite:///{tmp_path}/t.sqlite\n"
                    f"[api]\nauth_strategy = noauth\n{api}\n[sync]\n{sync}\n")
    return str(path)


def test_a_timeout_below_the_sync_budget_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = serve.main(["--config-file", _write(tmp_path, "timeout = 50", "budget_s = 45")])
    err = capsys.readouterr().err
    assert code == 2
    assert "[api] timeout (50 s)" in err and "[sync] budget_s (45 s) + 15 s" in err


def test_the_budget_environment_alias_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TALLY_REPORTING_SYNC_BUDGET_S", "300")
    assert serve.main(["--config-file", _write(tmp_path)]) == 2
    assert "[sync] budget_s (300 s) + 15 s" in capsys.readouterr().err
