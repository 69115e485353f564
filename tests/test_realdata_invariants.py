"""Every real trace we hold keeps every model's data tests: each analyse checks the tables it wrote (a failure is a
`model_test` row of trace_health), and here every model, the views too (profpipe/model_checks.py), is checked on
the output of every real PyTorch / HTA / Kineto / TraceLens / Nsight Systems trace under ../shared/realdata (a
share within 0-1, parts within their whole, a path within its span), and each model a run left empty for a
missing required input gives no row from its own query there. The MindSpore and Ascend sets are checked by
tests/test_realdata_exit.py and the Ascend suites."""
from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from conftest import REALDATA, run
from model_harness import unmet_requirements
from profpipe.errors import NoProfilerData
from profpipe.model_checks import check_models

#: Real GPU traces: every Kineto JSON and Nsight Systems export of these repositories, but the files that are no
#: trace (a memory timeline, an execution trace).
_ROOTS = ["HolisticTraceAnalysis", "kineto", "param", "TraceLens", "Fuser", "WeatherBench2"]
_NOT_TRACES = ("memory_timeline", "_et.json")


def _real_traces() -> list[str]:
    found = [p for root in _ROOTS if (REALDATA / root).is_dir() for p in sorted((REALDATA / root).rglob("*"))
             if p.is_file() and p.name.endswith((".json", ".json.gz", ".sqlite"))
             and not any(marker in p.name for marker in _NOT_TRACES)]
    return [str(p.relative_to(REALDATA)) for p in found]


_TRACES = _real_traces()


@pytest.mark.skipif(not _TRACES, reason=f"real data not available ({REALDATA} is not beside this checkout)")
@pytest.mark.parametrize("relative", _TRACES or ["none"])
def test_every_model_holds_on_every_real_trace(relative: str, tmp_path: Path) -> None:
    try:
        result = run(REALDATA / relative, tmp_path / "out", data_simplification=True)
    except NoProfilerData:  # a trace with nothing to analyse says so (tests/test_unread.py): no model to check
        return
    flagged = [r["message"] for r in result.health["rows"] if r["check_name"] == "model_test"]
    assert flagged == []
    with duckdb.connect(str(result.output / "profile.duckdb"), read_only=True) as con:
        failures = check_models(con)
        unmet = unmet_requirements(con)
    assert not failures, "\n".join(map(str, failures))
    assert unmet == []  # a model a run left empty for a missing input gives no row from it either
