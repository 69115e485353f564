"""Stage 2, ingest helper: which host ranges are training steps (Kineto annotations, NVTX ranges).

A trace marks its steps with named ranges: PyTorch's profiler writes `ProfilerStep#N`, Paddle's
`ProfileStep#N` (renamed on load), and code traced by Nsight Systems whatever NVTX range its author
pushed around a step. The user names that range with --step-range-name NAME: a range is a step when
its name is NAME, optionally followed by separators (space, #, :, _, =, -) and the step number.
Steps without a number in the name are numbered 1, 2, ... in start order.
"""
from __future__ import annotations

import re

#: The step_point rows (step start, FP point, BP point, step end) of a query whose CTEs `steps` (step,
#: start_ns, end_ns), `forward` and `backward` (step, op_name, ts_ns) found them.
STEP_POINTS_SQL = """
SELECT step, kind, op_name, seq, NULL::BIGINT AS stream_id, NULL::BIGINT AS tag, ts_ns
FROM (SELECT step, 'step_start' AS kind, NULL AS op_name, 0 AS seq, start_ns AS ts_ns FROM steps
      UNION ALL SELECT step, 'fp_start', op_name, 1, ts_ns FROM forward
      UNION ALL SELECT step, 'bp_end', op_name, 2, ts_ns FROM backward
      UNION ALL SELECT step, 'step_end', NULL, 3, end_ns FROM steps)
ORDER BY step, seq
"""


def step_pattern(step_range: str | None) -> str:
    """The regular expression of a step range's name; group 1 is its step number, when it has one."""
    if step_range is None:
        return r"^ProfilerStep#(\d+)$"
    return "^" + re.escape(step_range) + r"(?:[\s#:_=-]*(\d+))?$"


def steps_sql(spans: str, step_range: str | None) -> str:
    """SQL of the steps (step, start_ns, end_ns) among the spans of table `spans` (name, start_ns, dur_ns)."""
    pattern = sql_text(step_pattern(step_range))
    return f"""
        SELECT coalesce(number, row_number() OVER (ORDER BY start_ns)) AS step, start_ns, end_ns
        FROM (SELECT DISTINCT try_cast(nullif(regexp_extract(name, {pattern}, 1), '') AS BIGINT) AS number,
                              start_ns, start_ns + dur_ns AS end_ns
              FROM {spans} WHERE regexp_matches(name, {pattern}))
    """


def is_step_sql(name_column: str, step_range: str | None) -> str:
    """SQL condition: the span named `name_column` is a step range."""
    return f"regexp_matches({name_column}, {sql_text(step_pattern(step_range))})"


def sql_text(text: str) -> str:
    """`text` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"
