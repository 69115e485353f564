"""After the merge (stage 2 -> 3): the steps a run found but cannot measure, named in the trace-health ledger.

A step needs a start and an end to reach the per-step marts (int_step -> step_phases and the marts after it). A
capture cuts the step it stops in (a start, no end: the last step of a rank's capture) and may hold the end of one
begun before it (an end, no start: the first step); the profilers' own tools leave such steps out too, so these are
`excluded` (complete run). A step without its start or end anywhere else in the capture is damage (a marker lost
in the middle of a trace): `dropped` (partial). The runner adds the rows to the ledger before it is written; the
query is sql/queries/step_unfinished.sql.
"""
from __future__ import annotations

from pathlib import Path

from .health import HealthEvent
from .ingest.scratch import memory_database
from .models import query


def unfinished_steps(tables_dir: Path, row_counts: dict[str, int]) -> list[HealthEvent]:
    """The trace-health rows of the steps of tables_dir/step_point.parquet that lack a start or an end."""
    path = Path(tables_dir) / "step_point.parquet"
    if not row_counts.get("step_point") or not path.is_file():
        return []
    con = memory_database()
    try:
        quoted = str(path).replace("'", "''")
        con.execute(f"CREATE VIEW step_point AS SELECT * FROM read_parquet('{quoted}')")
        rows = con.execute(query("step_unfinished")).fetchall()
    finally:
        con.close()
    return [_event(rank, no_end, at_edge, steps, example) for rank, no_end, at_edge, steps, example in rows]


def _event(rank: int, no_end: bool, at_edge: bool, steps: int, example: int) -> HealthEvent:
    missing, has = ("end", "start") if no_end else ("start", "end")
    where = ("the capture stopped inside it" if no_end else "it began before the capture") if at_edge else \
        "its marker is missing inside the capture"
    return HealthEvent(
        source="step_point", rank=rank, check="truncated" if at_edge else "unlinked",
        action="excluded" if at_edge else "dropped", rows=steps, example=f"step {example}", tables="step_phases",
        message=f"{steps} step(s) of rank {rank} have a {has} but no {missing} ({where}): left out of the per-step "
                f"marts (step_phases and those after it), e.g. step {example}")
