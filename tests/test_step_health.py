"""Steps found but not measurable (profpipe/step_health.py): a step the capture cut (its start, no end, the last
one) or begun before it (an end, no start, the first one) is `excluded` with a trace-health row; one whose marker is
missing inside the capture is `dropped` (partial). Checked on a step_point table written by hand."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from profpipe.health import LOSSY_ACTIONS
from profpipe.step_health import unfinished_steps


def _points(tmp_path: Path, rows: list[tuple[int, int, int, str]]) -> Path:
    rank, capture, step, kind = zip(*rows)
    pq.write_table(pa.table({"rank": pa.array(rank, pa.int32()), "capture": pa.array(capture, pa.int32()),
                             "step": pa.array(step, pa.int64()), "kind": list(kind)}), tmp_path / "step_point.parquet")
    return tmp_path


def _complete(rank: int, capture: int, steps: range) -> list[tuple[int, int, int, str]]:
    return [(rank, capture, s, kind) for s in steps for kind in ("step_start", "fp_start", "step_end")]


def test_edges_are_excluded_and_a_hole_inside_is_dropped(tmp_path: Path) -> None:
    rows = (_complete(0, 0, range(2, 5)) + [(0, 0, 1, "step_end"), (0, 0, 5, "step_start")]  # both edges cut
            + _complete(1, 0, range(1, 4))  # rank 1: complete
            + [r for r in _complete(2, 0, range(1, 5)) if (r[2], r[3]) != (2, "step_end")])  # rank 2: a hole
    events = unfinished_steps(_points(tmp_path, rows), {"step_point": len(rows)})
    found = {(e.rank, e.check, e.action, e.rows, e.example) for e in events}
    assert found == {(0, "truncated", "excluded", 1, "step 1"), (0, "truncated", "excluded", 1, "step 5"),
                     (2, "unlinked", "dropped", 1, "step 2")}
    assert [e.action in LOSSY_ACTIONS for e in events if e.rank == 0] == [False, False]


def test_complete_steps_and_no_steps_give_no_row(tmp_path: Path) -> None:
    rows = _complete(0, 0, range(1, 4)) + _complete(0, 1, range(1, 3))
    assert unfinished_steps(_points(tmp_path, rows), {"step_point": len(rows)}) == []
    assert unfinished_steps(tmp_path, {"step_point": 0}) == []
