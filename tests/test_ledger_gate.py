"""The cost gate CI runs (.ci/run: benchmarks/ledger.py --fail-above 1.5 against benchmarks/ci-baseline): an input
this tree fails on, or runs more than the limit slower than the older tree, fails it; a run within it passes."""
from __future__ import annotations

import importlib.util
import subprocess
import sys

from conftest import REPO

_spec = importlib.util.spec_from_file_location("ledger", REPO / "benchmarks" / "ledger.py")
ledger = sys.modules["ledger"] = importlib.util.module_from_spec(_spec)  # its dataclasses look it up
_spec.loader.exec_module(ledger)


def _row(name: str, now_wall: float | None, before_wall: float, error: str = "") -> dict:
    now = {"ok": now_wall is not None, "wall_s": now_wall, "error": error}
    return {"input": name, "now": now, "before": {"ok": True, "wall_s": before_wall},
            "ratio": {"wall": ledger.ratio(now_wall, before_wall)}}


def test_the_gate_fails_on_a_slower_or_failing_input_only() -> None:
    rows = [_row("lenet_cpu", 1.49, 1.0), _row("kineto_tiny", 1.51, 1.0), _row("minddata", None, 1.0, "boom\nKeyError")]
    found = ledger.regressions(rows, 1.5)
    assert found == ["kineto_tiny: wall time 1.51x the older tree's (limit 1.5x)",
                     "minddata: this tree fails: KeyError"]
    assert ledger.regressions(rows[:1], 1.5) == []


def test_the_ci_baseline_is_a_commit_of_this_history() -> None:
    baseline = (REPO / "benchmarks" / "ci-baseline").read_text().strip()
    assert len(baseline) == 40
    assert subprocess.run(["git", "-C", str(REPO), "merge-base", "--is-ancestor", baseline, "HEAD"]).returncode == 0
    assert '--before "$(cat benchmarks/ci-baseline)"' in (REPO / ".ci" / "run").read_text()
