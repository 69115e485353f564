"""Stage 2, ingest: PyTorch profiler (Kineto) and Paddle Chrome-trace JSON -> host_op, host_api, device_exec, step_point,
memory_event, collective_event, python_frame, kernel_counter.

One source is one trace file (`*.pt.trace.json[.gz]`, Paddle's `*.paddle_trace.json` or any Chrome
trace object with `traceEvents`; shared/reference/formats-gpu.md, families B and D). The event array
is copied into DuckDB (trace_object) and mapped by category, across the schema generations (2021
Kineto and Paddle categories are renamed to current Kineto ones on load; Paddle's "[1.2 ms]" name
suffixes and "123(C++)" thread ids are cleaned):

* `cpu_op` / `user_annotation` (2021: `Operator`) -> host_op (side Host, with category and
  External id);
* `cuda_runtime` / `cuda_driver` (2021: `Runtime`) -> host_api (the launching call, correlation id);
* `kernel`, `gpu_memcpy`, `gpu_memset`, `cuda_sync` (2021: `Kernel`, `Memcpy`, `Memset`) and MTIA's
  `mtia_ccp_events` (its `dma_request` transfers are memcpys, with their size) ->
  device_exec (stream, correlation, External id, device), with the op the trace itself links:
  the host op carrying the same External id (Kineto's external correlation), else the op its
  runtime call was made in (Paddle, which has no External id);
* `[memory]` instants (profile_memory=True) -> memory_event (device, address, bytes allocated or
  freed, the allocator's totals where the trace has them);
* NCCL kernels (names starting `nccl`) and `record_param_comms` cpu_ops -> collective_event: one row per kernel with
  the collective args PyTorch records (`Collective name`, `dtype`, `In msg nelems`, `Out msg nelems`, `Group size`,
  `Process Group Name` / older `Process Group ID`, `Process Group Ranks`, `Seq`), from the kernel's copy completed
  by the op that launched it (or its parent or grandparent: an `nccl:<coll>` annotation may sit between), and one
  row per record_param_comms whose kernel is not in the trace (timed by the op); the element size from the dtype;
* `python_function` events (with_stack) -> python_frame (Python id and parent id; python_frames.py), and each host
  op's innermost frame (host_op.frame_index); the `Call stack` arg of ops (PyTorch 1.x) -> host_op.call_stack;
* `cuda_profiler_range` events (CUPTI range profiling, experimental_config profiler_metrics) -> kernel_counter: one
  row per kernel and counter of its args, paired with its launch by order (HTA's rule: _COUNTER_RANGES_SQL); read only
  when the trace has such events;
* `ProfilerStep#N` spans -> step_point (step start and end; FP point: the first op autograd recorded
  after the step's DataLoader annotations; BP point: the end of its last autograd engine event).

Times: `ts` and `dur` are µs, with ns fractions in newer traces, read exactly (epoch µs and µs since
baseTimeNanoseconds past 2^42 are split in two numbers on the copy, smaller times survive DuckDB's double:
trace_object); with
`baseTimeNanoseconds` they are relative to it. The events live in a scratch DuckDB database (scratch.py:
in memory, spilled under $TMPDIR beyond its limit; with the copied event array, up to about the
trace's uncompressed size on disk), and the tables leave it in batches. The clock is the Unix epoch (Kineto converts CUPTI
times to the host clock); a trace without a usable baseTimeNanoseconds whose times are not epoch-sized
(a trace cut before that member, which Kineto writes after the events) keeps its times relative, on clock
`kineto_relative`, with a `clock` row in trace_health.

Damage is never silent (trace_health, one row per kind): events without a name, a readable start or
duration, with NaN / infinite ones, beyond ±2^62 ns or with a negative duration are left out and counted
by check; ids and sizes that are not integers are read as none (repaired); exact duplicate events count
once (duplicate_record); a cut trace says where it was cut, how many events were read and which tables
lost rows (runtime calls whose device activity is missing: device_exec); elements that are not objects
are left out; so are events without a category (cat); a host thread id that is not a number is read as none
(repaired); device activities of 0 ns (legitimate: below the trace's resolution) and activities that start before
the one before them on their stream ended (programmatic dependent launch) are kept with a row (kept); activities
whose correlation id names no runtime call are kept as launched before the capture where the id is below every
call's and they ran first on their stream, else the id is damaged (read as none, repaired: _LAUNCHED_SQL);
ProfilerStep ranges that overlap, are out of order or cut through an op of their thread are left out of step_point
(clock, dropped: _steps_sql); collective args of the wrong JSON type, negative element counts or beyond 2^58, group
sizes below 1 and negative Seq are read as none (repaired), a collective lacking dtype, nelems or group size is kept
without a size. A trace that cannot be parsed at all is an InputError naming the file and the offset.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pyarrow as pa

from ..discover import Source
from ..errors import InputError, first_line_of
from ..health import Warn
from .nesting import nest
from .python_frames import PYTHON_FRAME_SQL, resolve_frames
from ..clocks import kineto_clock
from .run_info import run_info
from .scratch import check_trace_file, query_tables, scratch_database, scratch_folder
from .step_ranges import STEP_POINTS_SQL, is_step_sql, sql_text, step_pattern, steps_sql
from .trace_object import EXACT_DOUBLE_US, TraceArray, event_array, event_offset


_COLUMNS = "{'name': 'VARCHAR', 'cat': 'VARCHAR', 'ph': 'VARCHAR', 'pid': 'VARCHAR', 'tid': 'VARCHAR', " \
           "'ts': 'VARCHAR', 'dur': 'VARCHAR', 'args': 'JSON', 'ts_hi': 'BIGINT'}"

#: Categories by role (current Kineto names; 2021 Kineto and Paddle names are mapped to them on load).
HOST_OP_CATS = ("cpu_op", "user_annotation")
HOST_API_CATS = ("cuda_runtime", "cuda_driver", "xpu_runtime", "mtia_runtime", "privateuse1_runtime")
DEVICE_KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset", "cuda_sync": "sync",
                "mtia_ccp_events": "kernel"}
#: The ops PyTorch's profiler counts FLOPs for (with_flops: torch/csrc/profiler/util.cpp computeFlops).
_FLOP_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::conv2d", "aten::mul", "aten::add")
#: The ops whose bytes moved the model library estimates from their inputs (macro op_roofline_cost; mart op_roofline):
#: their Input Dims, Input type and Concrete Inputs are kept on host_op as the trace writes them.
_ROOFLINE_OPS = _FLOP_OPS + (
    "aten::matmul", "aten::linear", "aten::scaled_dot_product_attention", "aten::layer_norm", "aten::batch_norm",
    "aten::group_norm", "aten::rms_norm", "aten::add_", "aten::mul_", "aten::sub", "aten::sub_", "aten::div",
    "aten::div_", "aten::relu", "aten::relu_", "aten::gelu", "aten::silu", "aten::sigmoid", "aten::tanh",
    "aten::threshold_backward", "aten::gelu_backward", "aten::silu_backward")
#: 2021 Kineto and Paddle (TracerEventType) categories -> current Kineto ones.
_CATEGORY_ALIASES = {
    "Operator": "cpu_op", "Runtime": "cuda_runtime", "Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset",
    "OperatorInner": "cpu_op", "PythonOp": "cpu_op", "CudaRuntime": "cuda_runtime", "ProfileStep": "user_annotation",
    "Dataloader": "user_annotation", "UserDefined": "user_annotation", "PythonUserDefined": "user_annotation",
    "Forward": "user_annotation", "Backward": "user_annotation", "Optimization": "user_annotation",
    "Communication": "user_annotation"}

#: Complete events with the args the tables need, parsed once per event (the args JSON is not kept), and
#: the allocator's "[memory]" instants (ph "i") with theirs.
#: Names lose Paddle's "[1.234 ms]" suffix and its ProfileStep#N becomes ProfilerStep#N; `phase` is
#: what the event marks of a training step: dataloader, forward, backward or optimizer (Paddle says so
#: by category; Kineto by name: enumerate(DataLoader)..., autograd engine events, Optimizer.step...).
_EVENTS_SQL = f"""
SELECT * EXCLUDE (raw_ts, raw_dur, raw_ids, bad_id), bad_id,
       -- an event the tables cannot hold, by what is wrong with it (counted and left out: _FAULTS)
       CASE WHEN fault IS NOT NULL OR bad_id THEN left(concat('{{"name": ', to_json(name), ', "ph": ', to_json(ph),
                                                             ', "ts": ', to_json(raw_ts), ', "dur": ', to_json(raw_dur),
                                                             ', "args": ', to_json(list_filter(raw_ids || coalesce(memory, []), lambda x: x IS NOT NULL)), '}}'), 200) END AS example
FROM (
-- an id or size that is there but not an integer (read as none: counted)
SELECT *, (raw_ids[1] IS NOT NULL OR raw_ids[2] IS NOT NULL) AND external_id IS NULL
          OR (raw_ids[3] IS NOT NULL OR raw_ids[7] IS NOT NULL) AND correlation IS NULL
          OR raw_ids[4] IS NOT NULL AND stream IS NULL OR raw_ids[5] IS NOT NULL AND device IS NULL
          OR (raw_ids[10] IS NOT NULL OR raw_ids[11] IS NOT NULL) AND bytes IS NULL
          OR raw_ids[12] IS NOT NULL AND python_id IS NULL OR raw_ids[13] IS NOT NULL AND python_parent_id IS NULL
          OR raw_ids[14] IS NOT NULL AND python_module_id IS NULL
          OR raw_ids[16] IS NOT NULL AND registers_per_thread IS NULL OR raw_ids[17] IS NOT NULL AND shared_memory_bytes IS NULL
          OR raw_ids[18] IS NOT NULL AND try_cast(raw_ids[18] AS BIGINT) IS NULL
          OR raw_ids[19] IS NOT NULL AND try_cast(raw_ids[19] AS BIGINT) IS NULL
          OR (memory IS NOT NULL AND list_bool_or([memory[i] IS NOT NULL AND try_cast(memory[i] AS BIGINT) IS NULL
                                                   FOR i IN [2, 3, 5, 6]])) AS bad_id
FROM (
SELECT name, coalesce(c.alias, raw_cat) AS cat, ph, pid, tid, start_ns, dur_ns, memory, coll, shapes, counters, inexact_time,
       raw_ts, raw_dur,
       try_cast(coalesce(a[1], a[2]) AS BIGINT) AS external_id, try_cast(coalesce(a[3], a[7]) AS BIGINT) AS correlation,
       try_cast(a[4] AS BIGINT) AS stream, try_cast(a[5] AS BIGINT) AS device, a[6] IS NOT NULL AS has_sequence,
       replace(trim(a[8], '[]'), ' ', '') AS grid, replace(trim(a[9], '[]'), ' ', '') AS block,
       try_cast(coalesce(a[10], a[11]) AS BIGINT) AS bytes,
       try_cast(a[16] AS INTEGER) AS registers_per_thread, try_cast(a[17] AS BIGINT) AS shared_memory_bytes,
       -- a CUDA event sync's cudaEventRecord (its correlation id) and the stream it recorded on (-1: not known)
       nullif(try_cast(a[18] AS BIGINT), -1) AS wait_stream_id, nullif(try_cast(a[19] AS BIGINT), -1) AS wait_correlation,
       -- Python frames (with_stack): the tracer's id, its parent's and an nn.Module's (python_frames.py)
       -- (whole numbers only: a cast would round 1.5 into an id)
       CASE WHEN regexp_full_match(a[12], '-?[0-9]+') THEN try_cast(a[12] AS BIGINT) END AS python_id,
       CASE WHEN regexp_full_match(a[13], '-?[0-9]+') THEN try_cast(a[13] AS BIGINT) END AS python_parent_id,
       a[13] IS NOT NULL AS python_parent_given,
       CASE WHEN regexp_full_match(a[14], '-?[0-9]+') THEN try_cast(a[14] AS BIGINT) END AS python_module_id,
       -- an op's Python stack as PyTorch 1.x (and verbose traces) write it: frames innermost first, ';'-joined
       CASE WHEN raw_cat <> 'python_function' THEN nullif(a[15], '') END AS call_stack,
       CASE WHEN raw_cat = 'Dataloader' OR name LIKE 'enumerate(DataLoader)%' THEN 'dataloader'
            WHEN raw_cat = 'Forward' THEN 'forward'
            WHEN raw_cat = 'Backward' OR name LIKE 'autograd::engine::evaluate_function:%' THEN 'backward'
            WHEN raw_cat = 'Optimization' OR name LIKE 'Optimizer.step%' THEN 'optimizer' END AS phase,
       CASE WHEN name IS NULL THEN 'name'
            WHEN ph = 'X' AND raw_cat IS NULL THEN 'cat'
            WHEN start_ns BETWEEN -$limit AND $limit AND (ph <> 'X' OR dur_ns BETWEEN 0 AND $limit)
                 AND (ph <> 'i' OR try_cast(memory[4] AS BIGINT) IS NOT NULL) THEN NULL
            WHEN try_cast(raw_ts AS DOUBLE) IS NULL THEN 'ts'
            WHEN ph = 'X' AND try_cast(raw_dur AS DOUBLE) IS NULL THEN 'dur'
            WHEN NOT isfinite(try_cast(raw_ts AS DOUBLE)) OR (ph = 'X' AND NOT isfinite(try_cast(raw_dur AS DOUBLE)))
                 THEN 'non_finite'
            WHEN start_ns IS NULL OR start_ns NOT BETWEEN -$limit AND $limit OR (ph = 'X' AND (dur_ns IS NULL OR dur_ns > $limit))
                 THEN 'out_of_range'
            WHEN ph = 'X' AND dur_ns < 0 THEN 'negative_duration'
            ELSE 'bytes' END AS fault,
       a AS raw_ids
FROM (SELECT CASE WHEN suffix(name, ']') THEN regexp_replace(regexp_replace(name, '\\[[0-9.]+ ?[a-z]*s\\]$', ''),
                                                               '^ProfileStep#', 'ProfilerStep#')
                  ELSE name END AS name,
             cat AS raw_cat, ph, pid, ts AS raw_ts, dur AS raw_dur,
             -- Paddle's "123(C++)"; any other text stays as it is (its own thread; tid none: _report_odd_events)
             CASE WHEN regexp_full_match(tid, '\\d+\\(.*\\)') THEN regexp_extract(tid, '^(\\d+)\\(', 1) ELSE tid END AS tid,
             -- whole µs (most traces) convert as integers, fractions (ns resolution) as exact decimals, epoch µs
             -- split on the copy (trace_object) as the sum of their parts;
             -- a time that does not fit (a corrupt or huge number) is NULL: counted and left out
             try(CASE WHEN ts_hi IS NOT NULL
                      THEN ts_hi * 1000000000000000 + us_to_ns(ts) - 1000000000000000
                      ELSE us_to_ns(ts) END + $base_ns) AS start_ns,
             -- a fraction a double may have rounded: a split time that did not have its prefix's digits, or a large one
             -- the split did not reach (trace_object chose from the first events); quoted ones are exact
             CASE WHEN ts_hi IS NOT NULL THEN NOT coalesce(try_cast(ts AS DOUBLE) BETWEEN 1e12 AND 2e12 - 1, false)
                  ELSE (contains(ts, '.') OR contains(ts, 'e')) AND abs(try_cast(ts AS DOUBLE)) >= $exact_us
                  END AS inexact_time,
             us_to_ns(dur) AS dur_ns,
             json_extract_string(args, ['$."External id"', '$."external id"', '$.correlation', '$.stream',
                                        '$.device', '$."Sequence number"', '$."correlation id"',
                                        '$.grid', '$.block', '$.bytes', '$.size', '$."Python id"',
                                        '$."Python parent id"', '$."Python module id"', '$."Call stack"',
                                        '$."registers per thread"', '$."shared memory"', '$.wait_on_stream',
                                        '$.wait_on_cuda_event_record_corr_id']) AS a,
             -- the collective args PyTorch writes on record_param_comms and copies onto NCCL kernels, as JSON
             -- values (their types are checked where the collective table is built: _COLLECTIVE_SQL)
             CASE WHEN ph = 'X' AND (name = 'record_param_comms' OR starts_with(name, 'nccl'))
                  THEN json_extract(args, ['$."Collective name"', '$.dtype', '$."In msg nelems"', '$."Out msg nelems"',
                                           '$."Group size"', '$."Process Group Name"', '$."Process Group ID"',
                                           '$."Process Group Ranks"', '$.Seq']) END AS coll,
             -- the inputs of the ops PyTorch counts FLOPs for (_FLOPS_SQL), and a flops arg where a trace has one
             CASE WHEN ph = 'X' AND name IN {_ROOFLINE_OPS}
                  THEN json_extract(args, ['$."Input Dims"', '$."Concrete Inputs"', '$."Input type"', '$.flops']) END
                 AS shapes,
             -- CUPTI range profiling's counter values of a kernel (experimental_config profiler_metrics): _COUNTER_SQL
             CASE WHEN cat = 'cuda_profiler_range' THEN args END AS counters,
             CASE WHEN ph = 'i' THEN json_extract_string(args, ['$."Device Type"', '$."Device Id"', '$.Addr', '$.Bytes',
                                                                '$."Total Allocated"', '$."Total Reserved"']) END AS memory
      FROM read_json($path, format = 'array', columns = __COLUMNS__, ignore_errors = $tolerant)
      -- Python frames only where the run wants them (--select: Source.wanted)
      WHERE ph = 'X' AND ($frames OR cat IS DISTINCT FROM 'python_function') OR (ph = 'i' AND name = '[memory]'))
LEFT JOIN (VALUES {", ".join(f"('{k}', '{v}')" for k, v in _CATEGORY_ALIASES.items())}) AS c(original, alias)
    ON c.original = raw_cat))
""".replace("__COLUMNS__", _COLUMNS)

#: An op's FLOPs (events.shapes: its Input Dims, Concrete Inputs, Input type and flops arg): the trace's own flops
#: arg where it has one, else PyTorch's formulas from the input shapes: mm 2MKN (mat1 [M, K], mat2 [K, N]; addmm
#: inputs 2 and 3, the bias add not counted), bmm 2BMKN (baddbmm inputs 2 and 3), conv2d 2 N Hout Wout kh kw Cin
#: Cout / groups (Hout = (H + 2 padding - dilation (kh - 1) - 1) / stride + 1, from Concrete Inputs), mul and add
#: the elements of input 1 (broadcasting not counted). NULL where the shapes are missing, not integers or negative,
#: conv2d's stride, dilation or groups under 1 or its output under 1 x 1, or the product does not fit.
_FLOPS_SQL = """
CASE WHEN shapes IS NULL OR name NOT IN __FLOP_OPS__ THEN NULL
     WHEN try_cast(shapes[4] AS DOUBLE) IS NOT NULL THEN try_cast(shapes[4] AS BIGINT)
     ELSE try(CASE name
         WHEN 'aten::mm' THEN 2 * d[1][1] * d[1][2] * d[2][2]
         WHEN 'aten::addmm' THEN 2 * d[2][1] * d[2][2] * d[3][2]
         WHEN 'aten::bmm' THEN 2 * d[1][1] * d[1][2] * d[1][3] * d[2][3]
         WHEN 'aten::baddbmm' THEN 2 * d[2][1] * d[2][2] * d[2][3] * d[3][3]
         WHEN 'aten::conv2d' THEN CASE WHEN list_min(c[4]) >= 1 AND list_min(c[6]) >= 1 AND c[7][1] >= 1
             AND (d[1][3] + 2 * c[5][1] - c[6][1] * (d[2][3] - 1) - 1) // c[4][1] + 1 >= 1
             AND (d[1][4] + 2 * c[5][2] - c[6][2] * (d[2][4] - 1) - 1) // c[4][2] + 1 >= 1
             THEN 2 * d[1][1] * d[2][3] * d[2][4] * d[1][2] * d[2][1]
             * ((d[1][3] + 2 * c[5][1] - c[6][1] * (d[2][3] - 1) - 1) // c[4][1] + 1)
             * ((d[1][4] + 2 * c[5][2] - c[6][2] * (d[2][4] - 1) - 1) // c[4][2] + 1) // c[7][1] END
         ELSE CASE WHEN len(d[1]) = 0 THEN 1 ELSE list_reduce(d[1], lambda x, y: x * y) END END)
     END
""".replace("__FLOP_OPS__", str(_FLOP_OPS))

#: Host ops in nesting order: by thread, start, longest first, then External id (a parent is recorded
#: before its children); op_index is the position in that order.
_HOST_OPS_SQL = f"""
CREATE TABLE host_ops AS
SELECT (row_number() OVER (ORDER BY tid, start_ns, dur_ns DESC, external_id NULLS FIRST, name) - 1) AS op_index,
       'Host' AS side, try_cast(tid AS BIGINT) AS tid, name AS op_name, start_ns, dur_ns,
       coalesce(phase, CASE WHEN name LIKE 'ProfilerStep#%' THEN 'user_annotation' ELSE cat END) AS category,
       external_id, tid AS thread, CASE WHEN name = 'record_param_comms' THEN coll END AS coll, call_stack,
       {_FLOPS_SQL} AS flops,
       CASE WHEN shapes IS NOT NULL AND name IN {_FLOP_OPS} THEN json_extract_string(shapes[3], '$[0]') END AS flops_dtype,
       -- the inputs of the ops the roofline models (_ROOFLINE_OPS), as the trace writes them (JSON text)
       shapes[1]::VARCHAR AS input_dims, shapes[3]::VARCHAR AS input_types, shapes[2]::VARCHAR AS concrete_inputs
FROM (SELECT *,
             -- the shapes as integers (none unless every dim is written as a whole non-negative number: a float
             -- or a string is not rounded into one); Concrete Inputs' stride, padding, dilation and groups as lists
             -- ("[1, 1]", "1"), none unless whole non-negative numbers (1.5 is not read as 2)
             CASE WHEN regexp_full_match(shapes[1]::VARCHAR, '[\\[\\]0-9, ]*') THEN try_cast(shapes[1] AS BIGINT[][]) END AS d,
             CASE WHEN shapes IS NOT NULL THEN list_transform(try_cast(shapes[2] AS VARCHAR[]),
                 lambda x: CASE WHEN regexp_full_match(x, '\\[?[0-9]+(, *[0-9]+)*\\]?') THEN
                     try_cast(CASE WHEN starts_with(x, '[') THEN x ELSE '[' || x || ']' END AS BIGINT[]) END) END AS c
      FROM events WHERE cat IN {HOST_OP_CATS})
"""

_HOST_OP_SQL = """
SELECT o.* EXCLUDE (thread, coll), p.parent_index, __FRAME__ AS frame_index
FROM host_ops o JOIN parents p USING (op_index) __FRAMES__
ORDER BY o.start_ns
"""
#: Python frames (python_frames.py): the python_function events.
_FRAMES_SQL = """
SELECT tid AS thread, try_cast(tid AS BIGINT) AS tid, name, start_ns, dur_ns, python_id AS frame_id,
       python_parent_id AS parent_id, python_parent_given AS parent_given, python_module_id AS module_id
FROM events WHERE cat = 'python_function'
"""


def _host_op_sql(frames: bool) -> str:
    """host_op's rows, with the innermost Python frame of each op where the trace has frames."""
    if not frames:
        return _HOST_OP_SQL.replace("__FRAME__", "NULL::BIGINT").replace("__FRAMES__", "")
    return _HOST_OP_SQL.replace("__FRAME__", "f.op_index").replace(
        "__FRAMES__", "LEFT JOIN op_frames f ON f.call_id = o.op_index")

_HOST_API_SQL = f"""
SELECT try_cast(tid AS BIGINT) AS tid, name, cat AS category, correlation, external_id, start_ns, dur_ns
FROM events WHERE cat IN {HOST_API_CATS}
ORDER BY start_ns
"""

#: Device activities, and the host op each one's External id names (the one with that id that started last
#: before it: ids are unique in a sane trace, a stitched one repeats them), kept only where that op holds the
#: activity's runtime call on its thread or no call is known: some Kineto versions write the correlation id
#: as the External id of launches and activities, which then names no op or, by chance, one that did not
#: launch it (HTA's trace_filter traces).
_DEVICE_SQL = f"""
CREATE TABLE device AS
SELECT row_number() OVER () AS row_id, e.name, e.pid, e.tid, e.start_ns, e.dur_ns, e.correlation, e.external_id,
       e.stream, e.device, e.bytes, e.grid, e.block, e.registers_per_thread, e.shared_memory_bytes, e.coll,
       e.wait_stream_id, e.wait_correlation,
       CASE WHEN e.cat = 'mtia_ccp_events' AND e.name = 'dma_request' THEN 'memcpy' ELSE k.kind END AS kind
FROM events e JOIN (VALUES {", ".join(f"('{c}', '{k}')" for c, k in DEVICE_KINDS.items())}) AS k(cat, kind) USING (cat);
CREATE TABLE calls AS
SELECT correlation, tid AS thread, start_ns, dur_ns FROM events WHERE cat IN {HOST_API_CATS} AND correlation IS NOT NULL;
CREATE TABLE by_external_id AS
SELECT d.row_id, o.op_index, o.op_name
FROM device d ASOF JOIN host_ops o ON o.external_id = d.external_id AND d.start_ns >= o.start_ns
WHERE d.correlation IS NULL
   OR NOT EXISTS (SELECT 1 FROM calls c WHERE c.correlation = d.correlation)
   OR EXISTS (SELECT 1 FROM calls c WHERE c.correlation = d.correlation AND c.thread = o.thread
                                      AND c.start_ns BETWEEN o.start_ns AND o.start_ns + o.dur_ns)
"""

#: Each device activity with the op that launched it: the one its External id names (by_external_id), else
#: the innermost op open on its runtime call's thread when the call (same correlation id, the last before
#: it) was made; `unlinked` says why an activity has neither. An activity whose correlation id names no runtime
#: call of the trace was launched before the capture began where the id is below every call's (CUPTI and
#: roctracer number launches in order) and it starts no later than the first activity of its stream whose call
#: the trace holds (a stream runs its work in launch order); otherwise the id is damaged (`call_missing`).
_LAUNCHED_SQL = """
CREATE TABLE launched AS
WITH by_launch AS (
    SELECT d.row_id, c.op_index, h.op_name
    FROM (FROM device ANTI JOIN by_external_id USING (row_id)) d
    ASOF JOIN call_ops c ON c.call_id = d.correlation AND d.start_ns >= c.start_ns
    JOIN host_ops h ON h.op_index = c.op_index
), called AS (
    SELECT d.row_id, c.correlation IS NOT NULL AS has_call,
           min(d.start_ns) FILTER (WHERE c.correlation IS NOT NULL) OVER (
               PARTITION BY d.pid, coalesce(d.stream, try_cast(d.tid AS BIGINT))) AS first_called_ns
    FROM device d LEFT JOIN (SELECT DISTINCT correlation FROM calls) c USING (correlation)
), missing AS (
    SELECT row_id, CASE WHEN d.correlation IS NULL OR has_call THEN NULL
                        WHEN (SELECT min(correlation) FROM calls) IS NULL THEN 'no_calls'
                        WHEN d.correlation < (SELECT min(correlation) FROM calls)
                             AND d.start_ns <= coalesce(first_called_ns, d.start_ns) THEN 'before_capture'
                        ELSE 'damaged' END AS call_missing
    FROM device d JOIN called USING (row_id)
)
SELECT d.*, coalesce(x.op_index, l.op_index) AS op_index, coalesce(x.op_name, l.op_name) AS op_name, m.call_missing,
       CASE WHEN coalesce(x.op_index, l.op_index) IS NOT NULL OR m.call_missing = 'damaged' THEN NULL
            WHEN d.correlation IS NULL THEN 'no_correlation'
            WHEN m.call_missing IS NOT NULL THEN m.call_missing
            ELSE 'outside_ops' END AS unlinked
FROM device d LEFT JOIN by_external_id x USING (row_id) LEFT JOIN by_launch l USING (row_id)
JOIN missing m USING (row_id)
"""

#: Why a device activity has no launching op (launched.unlinked), as trace_health says it.
_UNLINKED = {
    "no_correlation": "have no correlation id and no External id of a host op",
    "before_capture": "were launched before the profiler started: their correlation ids name no runtime call and "
                      "are below every call's, and each ran before the first activity of its stream whose call the "
                      "trace holds",
    "no_calls": "have no runtime call with their correlation id: the trace holds no runtime calls (host activities "
                "were not recorded)",
    "outside_ops": "were launched by a runtime call made outside every host op",
}

_DEVICE_EXEC_SQL = """
SELECT coalesce(stream, try_cast(tid AS BIGINT), try_cast(regexp_extract(tid, '(\\d+)', 1) AS BIGINT)) AS stream_id,
       kind, name, CASE WHEN call_missing IS DISTINCT FROM 'damaged' THEN correlation END AS correlation,
       NULL::BIGINT AS task_id, op_name, start_ns, dur_ns, external_id,
       coalesce(device, try_cast(pid AS BIGINT)) AS device_id, op_index, bytes, grid, block, registers_per_thread,
       shared_memory_bytes, wait_stream_id, wait_correlation
FROM launched
ORDER BY start_ns
"""

#: Bytes per element of the dtypes PyTorch writes in the collective args (c10::ScalarType names, and torch's
#: own names for the few traces that write those); any other dtype has no element size.
ELEMENT_BYTES = {
    "Bool": 1, "Byte": 1, "Char": 1, "QInt8": 1, "QUInt8": 1, "Bits8": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1,
    "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1, "Float8_e8m0fnu": 1, "UInt8": 1, "Int8": 1,
    "Short": 2, "Half": 2, "BFloat16": 2, "UInt16": 2, "Bits16": 2,
    "Int": 4, "Float": 4, "QInt32": 4, "UInt32": 4, "ComplexHalf": 4,
    "Long": 8, "Double": 8, "UInt64": 8, "ComplexFloat": 8, "ComplexDouble": 16,
    "bool": 1, "uint8": 1, "int8": 1, "int16": 2, "float16": 2, "bfloat16": 2, "int32": 4, "float32": 4,
    "int64": 8, "float64": 8, "complex64": 8, "complex128": 16,
}
#: The most elements a collective's message may hold (2^58: with 16-byte elements its bytes stay below 2^62).
NELEMS_LIMIT = 1 << 58

#: One row per collective instance: each NCCL kernel (name starting `nccl`, HTA's communication rule) with the
#: args it carries (each missing one taken from the op's), else those of the record_param_comms op that launched it (the op its launch belongs to, or
#: that op's parent or grandparent: an `nccl:<coll>` annotation may sit between them); and each
#: record_param_comms op with args whose kernel is not in the trace (timed by the host op: no kernel ran, as for
#: `wait` and single-rank groups, or it was not captured). `fault_*` say which values are of the wrong type
#: (malformed) or out of range and were read as none; `incomplete` that a key Kineto writes with the name is missing.
_COLLECTIVE_SQL = f"""
CREATE TABLE collective AS
WITH args_ops AS (
    SELECT op_index, start_ns, dur_ns, coll FROM host_ops WHERE coll IS NOT NULL AND coll[1] IS NOT NULL
), kernels AS (
    SELECT row_id, name, stream, start_ns, dur_ns, op_index, coll FROM launched
    WHERE kind = 'kernel' AND starts_with(name, 'nccl')
), linked AS (
    SELECT k.*, coalesce(o0.op_index, o1.op_index, o2.op_index) AS args_op
    FROM kernels k
    LEFT JOIN args_ops o0 ON o0.op_index = k.op_index
    LEFT JOIN parents p1 ON p1.op_index = k.op_index LEFT JOIN args_ops o1 ON o1.op_index = p1.parent_index
    LEFT JOIN parents p2 ON p2.op_index = p1.parent_index LEFT JOIN args_ops o2 ON o2.op_index = p2.parent_index
), rows AS (
    SELECT 'kernel' AS timed_by, k.name AS kernel_name, k.stream AS stream_id, k.start_ns, k.dur_ns,
           o.start_ns AS host_start_ns, o.dur_ns AS host_dur_ns,
           CASE WHEN k.coll[1] IS NOT NULL THEN 'kernel' WHEN o.op_index IS NOT NULL THEN 'cpu_op' END AS args_from,
           -- the kernel's copy of the args, completed by the op's (Kineto copies no Seq onto the kernel)
           CASE WHEN k.coll[1] IS NOT NULL THEN [coalesce(k.coll[i], o.coll[i]) FOR i IN range(1, 10)] ELSE o.coll END AS a
    FROM linked k LEFT JOIN args_ops o ON o.op_index = k.args_op
    UNION ALL
    SELECT 'cpu_op', NULL, NULL, o.start_ns, o.dur_ns, o.start_ns, o.dur_ns, 'cpu_op', o.coll
    FROM args_ops o WHERE o.op_index NOT IN (SELECT args_op FROM linked WHERE args_op IS NOT NULL)
), typed AS (  -- each arg with its JSON type; integers as text (a number beyond int64 fails the cast below)
    SELECT * EXCLUDE (a, b),
           b[1] AS j_name, b[2] AS j_dtype, b[3] AS j_in, b[4] AS j_out, b[5] AS j_size, b[6] AS j_group_name,
           b[7] AS j_group_id, b[8] AS j_ranks, b[9] AS j_seq
    FROM (SELECT *, [CASE WHEN json_type(v) <> 'NULL' THEN v END FOR v IN a] AS b FROM rows)  -- a JSON null is no value
), checked AS (
    SELECT *,
           json_type(j_name) = 'VARCHAR' AS name_ok, json_type(j_dtype) = 'VARCHAR' AS dtype_ok,
           json_type(j_group_name) IN ('VARCHAR', 'BIGINT', 'UBIGINT') AS group_name_ok,
           json_type(j_group_id) IN ('VARCHAR', 'BIGINT', 'UBIGINT') AS group_id_ok,
           json_type(j_ranks) IN ('VARCHAR', 'ARRAY') AS ranks_ok,
           CASE WHEN json_type(j_in) IN ('BIGINT', 'UBIGINT') THEN try_cast(json_extract_string(j_in, '$') AS BIGINT) END AS in_v,
           CASE WHEN json_type(j_out) IN ('BIGINT', 'UBIGINT') THEN try_cast(json_extract_string(j_out, '$') AS BIGINT) END AS out_v,
           CASE WHEN json_type(j_size) IN ('BIGINT', 'UBIGINT') THEN try_cast(json_extract_string(j_size, '$') AS BIGINT) END AS size_v,
           CASE WHEN json_type(j_seq) IN ('BIGINT', 'UBIGINT') THEN try_cast(json_extract_string(j_seq, '$') AS BIGINT) END AS seq_v
    FROM typed
)
SELECT timed_by, kernel_name, stream_id, start_ns, dur_ns, host_start_ns, host_dur_ns, args_from,
       CASE WHEN name_ok THEN json_extract_string(j_name, '$') END AS name,
       CASE WHEN dtype_ok THEN json_extract_string(j_dtype, '$') END AS dtype,
       e.bytes AS element_bytes,
       CASE WHEN in_v BETWEEN 0 AND {NELEMS_LIMIT} THEN in_v END AS in_nelems,
       CASE WHEN out_v BETWEEN 0 AND {NELEMS_LIMIT} THEN out_v END AS out_nelems,
       CASE WHEN size_v BETWEEN 1 AND 2147483647 THEN size_v END AS group_size,
       CASE WHEN group_name_ok THEN json_extract_string(j_group_name, '$')
            WHEN group_id_ok THEN json_extract_string(j_group_id, '$') END AS group_name,
       CASE WHEN ranks_ok THEN replace(trim(CASE WHEN json_type(j_ranks) = 'VARCHAR' THEN json_extract_string(j_ranks, '$')
                                                 ELSE j_ranks::VARCHAR END, '[] '), ' ', '') END AS group_ranks,
       CASE WHEN seq_v >= 0 THEN seq_v END AS group_seq,
       -- what was read as none, by kind (counted in trace_health)
       args_from IS NOT NULL AND (
           (j_name IS NOT NULL AND NOT name_ok) OR (j_dtype IS NOT NULL AND NOT dtype_ok)
           OR (j_in IS NOT NULL AND json_type(j_in) NOT IN ('BIGINT', 'UBIGINT'))
           OR (j_out IS NOT NULL AND json_type(j_out) NOT IN ('BIGINT', 'UBIGINT'))
           OR (j_size IS NOT NULL AND json_type(j_size) NOT IN ('BIGINT', 'UBIGINT'))
           OR (j_seq IS NOT NULL AND json_type(j_seq) NOT IN ('BIGINT', 'UBIGINT'))
           OR (j_group_name IS NOT NULL AND NOT group_name_ok) OR (j_group_id IS NOT NULL AND NOT group_id_ok)
           OR (j_ranks IS NOT NULL AND NOT ranks_ok)) AS fault_type,
       args_from IS NOT NULL AND (
           (in_v IS NULL AND json_type(j_in) IN ('BIGINT', 'UBIGINT')) OR in_v NOT BETWEEN 0 AND {NELEMS_LIMIT}
           OR (out_v IS NULL AND json_type(j_out) IN ('BIGINT', 'UBIGINT')) OR out_v NOT BETWEEN 0 AND {NELEMS_LIMIT}
           OR (size_v IS NULL AND json_type(j_size) IN ('BIGINT', 'UBIGINT')) OR size_v NOT BETWEEN 1 AND 2147483647
           OR (seq_v IS NULL AND json_type(j_seq) IN ('BIGINT', 'UBIGINT')) OR seq_v < 0) AS fault_range,
       args_from IS NOT NULL AND (j_dtype IS NULL OR j_in IS NULL OR j_out IS NULL OR j_size IS NULL) AS incomplete,
       args_from IS NOT NULL AND dtype_ok AND e.bytes IS NULL AS unknown_dtype,
       left(concat_ws(', ', 'Collective name: ' || j_name, 'dtype: ' || j_dtype, 'In msg nelems: ' || j_in,
                      'Out msg nelems: ' || j_out, 'Group size: ' || j_size, 'Seq: ' || j_seq), 200) AS example
FROM checked
LEFT JOIN (VALUES {", ".join(f"('{k}', {v})" for k, v in ELEMENT_BYTES.items())}) AS e(dtype, bytes)
    ON dtype_ok AND e.dtype = json_extract_string(j_dtype, '$')
"""

_COLLECTIVE_TABLE_SQL = """
SELECT row_number() OVER (ORDER BY start_ns, stream_id NULLS LAST, timed_by DESC, kernel_name) - 1 AS event_index,
       name, dtype, element_bytes, in_nelems, out_nelems, group_size, group_name, group_ranks, group_seq,
       timed_by, args_from, kernel_name, stream_id, start_ns, dur_ns, host_start_ns, host_dur_ns
FROM collective
ORDER BY start_ns, event_index
"""


#: c10::DeviceType numbers of the "[memory]" instants' "Device Type".
#: CUPTI range profiling (PyTorch's experimental_config profiler_metrics): one event per kernel, its counters in args.
COUNTER_CAT = "cuda_profiler_range"

#: The kernels CUPTI's range profiler measured (one `cuda_profiler_range` event each, with no correlation id: the
#: profiler serializes kernels and writes synthetic times), numbered in time order (file order on a tie), and the
#: runtime calls that launched them: HolisticTraceAnalysis pairs the n-th with the n-th cudaLaunchKernel* call of
#: category cuda_runtime in time order, where both counts agree (cupti_counter_analysis).
_COUNTER_RANGES_SQL = f"""
CREATE TABLE counter_ranges AS
SELECT row_number() OVER (ORDER BY start_ns, rowid) - 1 AS range_index, name AS kernel_name, start_ns, dur_ns, counters
FROM events WHERE cat = '{COUNTER_CAT}';
CREATE TABLE counter_launches AS
SELECT row_number() OVER (ORDER BY start_ns, rowid) - 1 AS range_index, correlation
FROM events WHERE cat = 'cuda_runtime' AND starts_with(name, 'cudaLaunchKernel');
CREATE TABLE counter_values AS
SELECT r.range_index, r.kernel_name, r.start_ns, r.dur_ns, j.key AS counter, j.type AS json_type,
       CASE WHEN j.type IN ('BIGINT', 'UBIGINT', 'DOUBLE') THEN try_cast(j.value AS DOUBLE) END AS value,
       left(concat(j.key, ': ', j.value), 200) AS example
FROM (FROM counter_ranges WHERE json_type(counters) = 'OBJECT') r, json_each(r.counters) j
"""

#: kernel_counter's rows: the readable values (a number that is finite), with the launching call's correlation id
#: where the launches pair with the ranges ($paired).
_KERNEL_COUNTER_SQL = """
SELECT v.range_index, v.kernel_name, v.start_ns, v.dur_ns,
       CASE WHEN $paired THEN l.correlation END AS launch_correlation, v.counter, v.value
FROM counter_values v LEFT JOIN counter_launches l USING (range_index)
WHERE isfinite(v.value)
ORDER BY v.range_index, v.counter
"""

_DEVICE_TYPES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 19: "mtia", 20: "privateuse1"}

_MEMORY_EVENT_SQL = f"""
SELECT start_ns AS ts_ns, rowid AS seq, try_cast(tid AS BIGINT) AS tid,
       coalesce(t.label, 'device type ' || memory[1]) AS device_type, try_cast(memory[2] AS BIGINT) AS device_id,
       try_cast(memory[3] AS BIGINT) AS addr, try_cast(memory[4] AS BIGINT) AS bytes,
       try_cast(memory[5] AS BIGINT) AS total_allocated, try_cast(memory[6] AS BIGINT) AS total_reserved
FROM events LEFT JOIN (VALUES {", ".join(f"('{k}', '{v}')" for k, v in _DEVICE_TYPES.items())}) AS t(id, label)
    ON t.id = memory[1]
WHERE ph = 'i'
ORDER BY start_ns, seq
"""

#: Steps from the host's ProfilerStep#N (or the ranges the user names: step_ranges). FP point: after the step's
#: DataLoader spans, the first Forward span (Paddle), else the first op autograd recorded (it has a
#: Sequence number), else the first cpu_op. BP point: where the step's last backward event ends (Paddle's
#: Backward spans, Kineto's autograd engine events); no BP point without one (inference, or 2021 traces that lack
#: those events). Both lie in the step: only events that start in it carry them. The step's copies on the GPU
#: streams (gpu_user_annotation ProfilerStep#N) are kept as device_step_start and device_step_end points: HTA's step
#: cut-off counts their starts; the step's GPU window (int_step_gpu_window) is their span.
def _step_point_sql(step_range: str | None) -> str:
    return f"""
WITH inside AS (  -- the events that can carry a point, in the step that holds their start (an ASOF join: steps
                -- do not overlap; a range join would pair every step with every event)
    SELECT s.step, e.name, e.cat, e.phase, e.has_sequence, e.start_ns, e.start_ns + e.dur_ns AS end_ns
    FROM (SELECT * FROM events WHERE (cat = 'cpu_op' OR phase IS NOT NULL) AND NOT {is_step_sql('name', step_range)}) e
    ASOF JOIN steps s ON e.start_ns >= s.start_ns
    WHERE e.start_ns < s.end_ns
), loading AS (
    SELECT step, max(end_ns) AS loaded_ns FROM inside WHERE phase = 'dataloader' GROUP BY step
), forward AS (  -- a Forward span (Paddle), else the first op autograd recorded (it carries a Sequence number)
    SELECT step, coalesce(arg_min(name, start_ns) FILTER (WHERE marked), arg_min(name, start_ns) FILTER (WHERE recorded),
                          arg_min(name, start_ns)) AS op_name,
           coalesce(min(start_ns) FILTER (WHERE marked), min(start_ns) FILTER (WHERE recorded), min(start_ns)) AS ts_ns
    FROM (SELECT i.step, i.name, i.start_ns, i.phase = 'forward' AS marked,
                 i.has_sequence AND i.name NOT LIKE 'autograd::%' AS recorded
          FROM inside i LEFT JOIN loading l USING (step)
          WHERE i.start_ns >= coalesce(l.loaded_ns, i.start_ns) AND (i.cat = 'cpu_op' OR i.phase = 'forward'))
    GROUP BY step
), backward AS (
    SELECT step, arg_max(name, end_ns) AS op_name, max(end_ns) AS ts_ns
    FROM inside WHERE cat IN {HOST_OP_CATS} AND phase = 'backward' GROUP BY step
), host_points AS ({STEP_POINTS_SQL}
), device_steps AS (  -- the step's copies on the GPU streams (gpu_user_annotation), by the number in their name
    SELECT try_cast(nullif(regexp_extract(name, {sql_text(step_pattern(step_range))}, 1), '') AS BIGINT) AS step,
           start_ns, start_ns + dur_ns AS end_ns
    FROM events WHERE cat = 'gpu_user_annotation' AND {is_step_sql('name', step_range)}
), kept_device_steps AS (  -- those of the steps left out are left out too
    FROM device_steps WHERE step NOT IN (SELECT step FROM host_steps WHERE fault IS NOT NULL)
)
SELECT * FROM host_points
UNION ALL
SELECT step, 'device_step_start', NULL, 4, NULL, NULL, start_ns FROM kept_device_steps WHERE step IS NOT NULL
UNION ALL
SELECT step, 'device_step_end', NULL, 5, NULL, NULL, end_ns FROM kept_device_steps WHERE step IS NOT NULL
ORDER BY step, seq, ts_ns"""


#: The host's steps (a gpu_user_annotation ProfilerStep#N is the same step on a GPU stream's clock of work, later
#: than the host's, and would give each step two windows), each with what makes its window one the trace's ops
#: contradict (`fault`): it overlaps the step before or after it, its number is not above the one before it and
#: below the one after it, or an op of its thread crosses its start or its end (a step holds the ops run in it,
#: as PyTorch's profiler.step() opens it between iterations: time going backwards). Table `steps` keeps the others.
def _steps_sql(step_range: str | None) -> str:
    return f"""
CREATE TABLE host_steps AS
WITH host_spans AS (
    SELECT name, start_ns, dur_ns FROM events WHERE cat IN {HOST_OP_CATS}
), found AS ({steps_sql("host_spans", step_range)}
), ordered AS (
    SELECT *, lag(end_ns) OVER w AS prev_end, lead(start_ns) OVER w AS next_start, lag(step) OVER w AS prev_step,
           lead(step) OVER w AS next_step
    FROM found WINDOW w AS (ORDER BY start_ns, end_ns, step)
), threads AS (
    SELECT DISTINCT s.step, s.start_ns, s.end_ns, e.tid
    FROM found s JOIN events e ON e.start_ns = s.start_ns AND e.start_ns + e.dur_ns = s.end_ns
    WHERE e.cat IN {HOST_OP_CATS} AND {is_step_sql('e.name', step_range)}
), ops AS (
    SELECT tid, start_ns, start_ns + dur_ns AS end_ns FROM events WHERE cat = 'cpu_op'
), cut AS (  -- an op that begins in a step and ends after it, or begins before the next step and ends inside it
             -- (ASOF joins: each op meets the step it starts in and the one after, not every step of its thread)
    SELECT t.step, t.start_ns FROM ops o ASOF JOIN threads t ON o.tid = t.tid AND o.start_ns >= t.start_ns
    WHERE o.start_ns > t.start_ns AND o.start_ns < t.end_ns AND o.end_ns > t.end_ns
    UNION
    SELECT t.step, t.start_ns FROM ops o ASOF JOIN threads t ON o.tid = t.tid AND o.start_ns < t.start_ns
    WHERE o.end_ns > t.start_ns AND o.end_ns < t.end_ns
)
SELECT o.step, o.start_ns, o.end_ns,
       CASE WHEN o.start_ns < o.prev_end OR o.end_ns > o.next_start THEN 'overlap'
            WHEN o.step <= o.prev_step OR o.step >= o.next_step THEN 'order'
            WHEN c.step IS NOT NULL THEN 'cut' END AS fault
FROM ordered o LEFT JOIN cut c USING (step, start_ns);
CREATE TABLE steps AS SELECT step, start_ns, end_ns FROM host_steps WHERE fault IS NULL
"""


def _check_steps(con: duckdb.DuckDBPyConnection, path: Path, step_range: str | None, warn: Warn) -> None:
    """Tables host_steps and steps (_steps_sql); a trace_health row for the steps left out, whose windows the
    trace's ops contradict (their ops then belong to no step: the step's numbers would be wrong)."""
    con.execute(_steps_sql(step_range))
    counts = dict(con.execute(
        "SELECT fault, count(*) FROM host_steps WHERE fault IS NOT NULL GROUP BY fault").fetchall())
    if not counts:
        return
    example = con.execute("SELECT concat('step ', step, ' from ', start_ns, ' to ', end_ns, ' ns (', fault, ')') "
                          "FROM host_steps WHERE fault IS NOT NULL ORDER BY start_ns LIMIT 1").fetchall()[0][0]
    rows = sum(counts.values())
    what = ", ".join(f"{n} {_STEP_FAULTS[fault]}" for fault, n in sorted(counts.items()))
    warn(f"{path}: {rows} steps are left out, as the trace's times contradict their windows ({what}); their ops "
         "belong to no step", check="clock", action="dropped", rows=rows, path=path, example=example,
         tables="step_point")


#: Why a step's window cannot be trusted (host_steps.fault), as trace_health says it.
_STEP_FAULTS = {"overlap": "overlap the step before or after them",
                "order": "are out of order (a number not above the step's before them)",
                "cut": "start after an op of their thread that ends inside them, or end before one that began "
                       "inside them ends (time going backwards)"}


#: Top-level members kept in run_info.metadata_json (libkineto's INFO/WARNING logs are left out).
_METADATA_KEYS = ("schemaVersion", "distributedInfo", "deviceProperties", "baseTimeNanoseconds", "traceName",
                  "cupti_version", "cuda_runtime_version", "cuda_driver_version", "record_shapes", "profile_memory")


def read(source: Source, warn: Warn) -> Iterator[tuple[str, pa.Table]]:
    """Yield the normalized tables of one Kineto trace file."""
    path = source.files["trace"]
    check_trace_file(path, source.rank, "no distributedInfo.rank in the trace and no rank in the file name "
                                        "(rank-<n>, worker<n>)", "a PyTorch profiler (Kineto) trace JSON object")
    with scratch_folder("kineto") as scratch:
        with scratch_database(scratch) as con:
            array = _load_events(con, path, scratch, warn,
                                 frames=source.wanted is None or "python_frame" in source.wanted)
            for repair in array.repairs:
                warn(f"{path}: {repair}", check="malformed_record", action="kept", rows=0, path=path,
                     offset=array.size)
            if array.trailer_cut:
                warn(f"{path}: {array.trailer_cut}", check="truncated", action="kept", rows=0, path=path,
                     offset=array.size)
            device = _drop_faults(con, path, warn, array.fault_offsets)
            _report_odd_events(con, path, warn)
            if array.truncated_at is not None or array.gzip_cut_short:
                _report_truncation(con, path, array, warn)
            clock = _check_clock(con, path, array, warn)
            con.execute(_HOST_OPS_SQL)
            con.execute(_DEVICE_SQL)
            nest(con, _NESTING_SQL)
            con.execute(_LAUNCHED_SQL)
            _report_unlinked(con, path, warn)
            con.execute(_COLLECTIVE_SQL)
            _report_collective_args(con, path, warn)
            frames, ranges = con.execute(f"SELECT count(*) FILTER (WHERE cat = 'python_function'), "
                                         f"count(*) FILTER (WHERE cat = '{COUNTER_CAT}') FROM events").fetchall()[0]
            counters = _counter_sql(con, path, warn) if ranges else []
            _check_steps(con, path, source.step_range, warn)
            if frames:
                resolve_frames(con, _FRAMES_SQL, "SELECT op_index, thread, start_ns FROM host_ops", path, warn)
            yield "run_info", _run_info(source, array.metadata, device > 0, clock, path, warn)
            tables = [("host_op", _host_op_sql(frames > 0)), ("host_api", _HOST_API_SQL),
                      ("device_exec", _DEVICE_EXEC_SQL), ("step_point", _step_point_sql(source.step_range)),
                      ("memory_event", _MEMORY_EVENT_SQL), ("collective_event", _COLLECTIVE_TABLE_SQL)] + (
                [("python_frame", PYTHON_FRAME_SQL)] if frames else []) + counters
            yield from query_tables(con, [(name, sql) for name, sql in tables
                                          if source.wanted is None or name in source.wanted])


def _counter_sql(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> list[tuple[str, str]]:
    """kernel_counter's query, for a trace with CUPTI range-profiler events (only then: the cost follows the data),
    after trace_health rows for what it cannot hold: a counter value that is not a finite number (text, true, null,
    a list: malformed_record, dropped), a range whose args are no object (no counters: malformed_record, dropped), and
    launches that do not pair with the ranges (unlinked, kept: no launch_correlation, as HTA gives no ops then)."""
    con.execute(_COUNTER_RANGES_SQL)
    ranges, launches, no_object, no_object_example, bad, bad_example, bad_counters = con.execute("""
        SELECT (SELECT count(*) FROM counter_ranges), (SELECT count(*) FROM counter_launches),
               (SELECT count(*) FROM counter_ranges WHERE json_type(counters) IS DISTINCT FROM 'OBJECT'),
               (SELECT any_value(kernel_name) FROM counter_ranges WHERE json_type(counters) IS DISTINCT FROM 'OBJECT'),
               count(*) FILTER (WHERE NOT coalesce(isfinite(value), false)),
               any_value(example) FILTER (WHERE NOT coalesce(isfinite(value), false)),
               string_agg(DISTINCT counter, ', ' ORDER BY counter) FILTER (WHERE NOT coalesce(isfinite(value), false))
        FROM counter_values""").fetchall()[0]
    if bad:
        warn(f"{path}: {bad} CUPTI counter values ({bad_counters}) of cuda_profiler_range events are not finite numbers; "
             "left out", check="malformed_record", action="dropped", rows=bad, path=path, example=bad_example,
             tables="kernel_counter")
    if no_object:
        warn(f"{path}: {no_object} cuda_profiler_range events have no args object of counters; left out",
             check="malformed_record", action="dropped", rows=no_object, path=path, example=no_object_example,
             tables="kernel_counter")
    if launches != ranges:
        warn(f"{path}: {ranges} kernels measured by CUPTI's range profiler (cuda_profiler_range) but {launches} "
             "cudaLaunchKernel calls: a range cannot be paired with its launch by order (HTA's rule), so its counters "
             "are kept without a launching call or op", check="unlinked", action="kept", rows=ranges, path=path,
             tables="kernel_counter")
    return [("kernel_counter", _KERNEL_COUNTER_SQL.replace("$paired", "true" if launches == ranges else "false"))]


def _report_unlinked(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """One trace_health row per reason a device activity has no launching op (it is kept, without an op), and one
    for activities whose correlation id is damaged (_LAUNCHED_SQL: it names no runtime call, yet they were not
    launched before the capture): the id is read as none (repaired), so the activity keeps only the op its External
    id names."""
    for reason, rows, kinds, example in con.execute(
            "SELECT unlinked, count(*), string_agg(DISTINCT kind, ', ' ORDER BY kind), min(name) FROM launched "
            "WHERE unlinked IS NOT NULL GROUP BY unlinked ORDER BY unlinked").fetchall():
        warn(f"{path}: {rows} device activities ({kinds}) {_UNLINKED[reason]}: kept without a launching op",
             check="unlinked", action="kept", rows=rows, path=path, example=example, tables="device_exec")
    damaged, example = con.execute(
        "SELECT count(*), any_value(concat(name, ' (correlation ', correlation, ', at ', start_ns, ' ns)')) "
        "FROM launched WHERE call_missing = 'damaged'").fetchall()[0]
    if damaged:
        warn(f"{path}: {damaged} device activities have a correlation id that names no runtime call of the trace, "
             "though they were not launched before the capture (the id is not below every call's, or they ran "
             "after work of their stream whose call the trace holds): the id is damaged, or its call is missing "
             "from the middle of the capture (filtered out); read as none, their op is the one their External id "
             "names, if any", check="unlinked", action="repaired", rows=damaged, path=path,
             example=example, tables="device_exec")


def _report_collective_args(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """trace_health rows for collective args (collective table): values of the wrong type or out of range are read as
    none (repaired); a collective without a key Kineto writes with its name, or of a dtype of unknown size, is kept
    as it is (its message size stays unknown)."""
    counts = con.execute(
        "SELECT count(*) FILTER (WHERE fault_type), any_value(example) FILTER (WHERE fault_type), "
        "count(*) FILTER (WHERE fault_range), any_value(example) FILTER (WHERE fault_range), "
        "count(*) FILTER (WHERE incomplete), any_value(example) FILTER (WHERE incomplete), "
        "count(*) FILTER (WHERE unknown_dtype), any_value(dtype) FILTER (WHERE unknown_dtype) FROM collective").fetchall()[0]
    wrong, wrong_example, out, out_example, incomplete, incomplete_example, unknown, unknown_example = counts
    if wrong:
        warn(f"{path}: {wrong} collectives have an arg of the wrong type (Collective name, dtype, In/Out msg nelems, "
             "Group size, Process Group Name/ID/Ranks, Seq); it is read as none", check="malformed_record",
             action="repaired", rows=wrong, path=path, example=wrong_example, tables="collective_event")
    if out:
        warn(f"{path}: {out} collectives have a negative or too large element count (beyond 2^58), a group size below 1 "
             "or a negative Seq; it is read as none", check="out_of_range", action="repaired", rows=out, path=path,
             example=out_example, tables="collective_event")
    if incomplete:
        warn(f"{path}: {incomplete} collectives lack one of dtype, In msg nelems, Out msg nelems, Group size: kept, "
             "without a message size", check="malformed_record", action="kept", rows=incomplete, path=path,
             example=incomplete_example, tables="collective_event")
    if unknown:
        warn(f"{path}: {unknown} collectives have a dtype of unknown element size: kept, without a message size",
             check="other", action="kept", rows=unknown, path=path, example=unknown_example, tables="collective_event")


#: Times and durations beyond ±2^62 ns (146 years) are refused: a start plus a duration always fits in int64.
TIME_LIMIT_NS = 1 << 62
#: What is wrong with an event the tables cannot hold (events.fault): the ledger's check and a description.
_FAULTS = {
    "name": ("malformed_record", "without a name"),
    "cat": ("malformed_record", "without a category (cat), which says what an event is and which table holds it"),
    "ts": ("malformed_record", "whose start time is missing or not a number"),
    "dur": ("malformed_record", "whose duration is missing or not a number"),
    "non_finite": ("non_finite", "whose start time or duration is NaN or infinite"),
    "out_of_range": ("out_of_range", "whose start time or duration is beyond ±146 years of ns"),
    "negative_duration": ("negative_duration", "with a negative duration"),
    "bytes": ("malformed_record", "(allocator [memory] instants) whose Bytes is missing or not an integer"),
}
#: The columns that make two events the same record (an exact duplicate is counted once).
_EVENT_KEY = ("name, cat, ph, pid, tid, start_ns, dur_ns, memory, external_id, correlation, stream, device, "
              "has_sequence, grid, block, bytes, python_id, python_parent_id, registers_per_thread, "
              "shared_memory_bytes, counters, wait_stream_id, wait_correlation")
#: Below this many ns (about 3 years), times are not on the Unix epoch: relative to baseTimeNanoseconds.
_RELATIVE_NS = 10 ** 17
#: The tables each category's events go to.
_TABLE_OF = {**{c: "host_op" for c in HOST_OP_CATS}, **{c: "host_api" for c in HOST_API_CATS},
             **{c: "device_exec" for c in DEVICE_KINDS}, "python_function": "python_frame",
             COUNTER_CAT: "kernel_counter"}


def _drop_faults(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn, offsets: dict[str, int]) -> int:
    """Report and leave out the events the tables cannot hold (events.fault), report the ids that are not
    integers (read as none), and count exact duplicate events once; return the device events kept."""
    found = con.execute(
        f"SELECT fault, count(*), any_value(example) FILTER (WHERE fault IS NOT NULL), count(*) FILTER (WHERE bad_id), "
        f"any_value(example) FILTER (WHERE bad_id), count(*) FILTER (WHERE cat IN {tuple(DEVICE_KINDS)}), "
        f"string_agg(DISTINCT cat, ',') FILTER (WHERE fault IS NOT NULL) FROM events GROUP BY fault").fetchall()
    device = 0
    for fault, count, example, bad_ids, id_example, devices, cats in found:
        if fault is None:
            device = devices
        else:
            check, what = _FAULTS[fault]
            tables = sorted({_TABLE_OF.get(c, "memory_event" if fault == "bytes" else "") for c in (cats or "").split(",")}
                            - {""})
            warn(f"{path}: {count} events {what} are left out", check=check, action="dropped", rows=count, path=path,
                 offset=offsets.get(fault), example=example, tables=",".join(tables) or None)
        if bad_ids and fault is None:
            warn(f"{path}: {bad_ids} events have an id or size (External id, correlation, stream, device, bytes, "
                 "Addr, totals, a CUDA event sync's wait_on_stream or record correlation) that is not an integer; it is read as none", check="malformed_record",
                 action="repaired", rows=bad_ids, path=path, example=id_example)
    if any(fault is not None for fault, *_ in found):
        con.execute("DELETE FROM events WHERE fault IS NOT NULL")
    if not con.execute(f"SELECT count(*) > count(DISTINCT hash({_EVENT_KEY})) FROM events").fetchall()[0][0]:
        return device  # no two events alike (equal events hash alike; the exact count below runs otherwise)
    duplicates, example = con.execute(
        f"SELECT coalesce(sum(n - 1), 0)::BIGINT, any_value(concat(event_name, ' at ', event_start, ' ns, ', "
        f"event_dur, ' ns')) FROM (SELECT count(*) AS n, any_value(name) AS event_name, any_value(start_ns) AS event_start, "
        f"any_value(dur_ns) AS event_dur FROM events GROUP BY {_EVENT_KEY} HAVING count(*) > 1)").fetchall()[0]
    if duplicates:
        con.execute(f"CREATE TABLE unique_events AS SELECT * EXCLUDE (event_row, event_rank) FROM ("
                    f"SELECT *, rowid AS event_row, row_number() OVER (PARTITION BY {_EVENT_KEY} ORDER BY rowid) "
                    "AS event_rank FROM events) WHERE event_rank = 1 ORDER BY event_row")
        con.execute("DROP TABLE events")
        con.execute("ALTER TABLE unique_events RENAME TO events")
        device = con.execute(f"SELECT count(*) FROM events WHERE cat IN {tuple(DEVICE_KINDS)}").fetchall()[0][0]
        warn(f"{path}: {duplicates} events repeat an earlier event exactly (same name, times, ids); each is counted "
             "once", check="duplicate_record", action="dropped", rows=duplicates, path=path, example=example)
    return device


#: Device activities that occupy their stream (a sync waits on it): those that should not overlap on it.
_STREAM_KINDS = tuple(c for c, kind in DEVICE_KINDS.items() if kind != "sync")


def _report_odd_events(con: duckdb.DuckDBPyConnection, path: Path, warn: Warn) -> None:
    """trace_health rows for events the tables keep but whose values are odd: host events whose thread id is not a
    number (read as none, repaired; each such thread stays a thread of its own), device activities of 0 ns (real
    traces hold many: shorter than the trace's resolution, whole µs before PyTorch 2; kept) and activities that
    start before the one before them on their stream ended (one stream runs one at a time; the times are
    kept as recorded, so a stream's busy time is less than the sum of its activities' durations)."""
    odd_tid, tid_example, zero, zero_kinds, zero_example, overlap, overlap_example = con.execute(f"""
        WITH stream AS (
            SELECT name, start_ns, max(start_ns + dur_ns) OVER (
                       PARTITION BY pid, coalesce(stream, try_cast(tid AS BIGINT)) ORDER BY start_ns, dur_ns
                       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until
            FROM events WHERE cat IN {_STREAM_KINDS})
        SELECT (SELECT count(*) FILTER (WHERE try_cast(tid AS BIGINT) IS NULL) FROM events
                WHERE cat IN {(*HOST_OP_CATS, *HOST_API_CATS, "python_function")}),
               (SELECT any_value(tid) FILTER (WHERE try_cast(tid AS BIGINT) IS NULL) FROM events
                WHERE cat IN {(*HOST_OP_CATS, *HOST_API_CATS, "python_function")}),
               (SELECT count(*) FROM events WHERE cat IN {tuple(DEVICE_KINDS)} AND dur_ns = 0),
               (SELECT string_agg(DISTINCT cat, ', ' ORDER BY cat) FROM events
                WHERE cat IN {tuple(DEVICE_KINDS)} AND dur_ns = 0),
               (SELECT any_value(name) FROM events WHERE cat IN {tuple(DEVICE_KINDS)} AND dur_ns = 0),
               (SELECT count(*) FROM stream WHERE start_ns < busy_until),
               (SELECT any_value(concat(name, ' at ', start_ns, ' ns, ', busy_until - start_ns, ' ns before the one '
                                        'before it ended')) FROM stream WHERE start_ns < busy_until)""").fetchall()[0]
    if odd_tid:
        warn(f"{path}: {odd_tid} host events have a thread id that is not a number (as Paddle's '123(C++)' would be); "
             "their tid is read as none, each such thread kept apart", check="malformed_record", action="repaired",
             rows=odd_tid, path=path, example=f"tid {tid_example}", tables="host_op,host_api,python_frame")
    if zero:
        warn(f"{path}: {zero} device activities ({zero_kinds}) last 0 ns, shorter than the trace's time resolution "
             "(real traces hold them); kept as recorded", check="out_of_range", action="kept", rows=zero, path=path,
             example=zero_example, tables="device_exec")
    if overlap:
        warn(f"{path}: {overlap} device activities start before the one before them on their stream ended: kernels "
             "under programmatic dependent launch (PDL, Hopper and later GPUs: a kernel may start while the one before "
             "it on its stream finishes), or times converted from the device clock; kept as recorded, so a stream's "
             "busy time is less than the sum of its durations", check="clock", action="kept", rows=overlap,
             path=path, example=overlap_example, tables="device_exec")


def _report_truncation(con: duckdb.DuckDBPyConnection, path: Path, array: TraceArray, warn: Warn) -> None:
    """The ledger's `truncated` row of a trace cut short: the bytes lost, the events kept, an estimate of the
    events lost, and which tables lost rows (runtime calls whose device work is missing: device_exec)."""
    kept, last_cat, orphans = con.execute(f"""
        WITH launching AS (  -- names of calls that launch device work: seen doing so here, or named for it
            SELECT DISTINCT h.name FROM events h JOIN events d ON d.correlation = h.correlation
            WHERE h.cat IN {HOST_API_CATS} AND d.cat IN {tuple(DEVICE_KINDS)})
        SELECT (SELECT count(*) FROM events), (SELECT cat FROM events ORDER BY rowid DESC LIMIT 1),
               (SELECT count(*) FROM events r WHERE r.cat IN {HOST_API_CATS} AND r.correlation IS NOT NULL
                  AND (r.name IN (SELECT name FROM launching) OR regexp_matches(r.name, '(?i)launch|memcpy|memset'))
                  AND NOT EXISTS (SELECT 1 FROM events d WHERE d.cat IN {tuple(DEVICE_KINDS)}
                                  AND d.correlation = r.correlation))""").fetchall()[0]
    tables = {_TABLE_OF.get(last_cat, "host_op")} if last_cat else set()
    if "host_op" in tables:
        tables.add("step_point")
    if orphans:
        tables.add("device_exec")
    if array.truncated_at is not None:
        message = (f"{path}: the trace is cut short at byte {array.truncated_at} (uncompressed; the file holds "
                   f"{array.size} bytes): its {kept} complete events are read, the incomplete last one is lost "
                   f"({array.size - array.truncated_at} bytes) with whatever followed it")
    else:
        message = f"{path}: the trace ends after {array.size} bytes (uncompressed): whatever followed is lost"
    if array.gzip_cut_short:
        message += "; the gzip file stops before its end (no end-of-stream marker)"
    if orphans:
        message += (f"; {orphans} runtime calls launch device work that is missing from what is left: device_exec "
                    f"lost at least {orphans} rows (Kineto writes device events after the host events)")
    warn(message, check="truncated", action="dropped", rows=orphans + (array.truncated_at is not None),
         path=path, offset=array.truncated_at if array.truncated_at is not None else array.size,
         tables=",".join(sorted(tables)) or None)


def _check_clock(con: duckdb.DuckDBPyConnection, path: Path, array: TraceArray, warn: Warn) -> str:
    """The trace's clock: the Unix epoch, where its times (with baseTimeNanoseconds) are epoch-sized; times
    without a usable baseTimeNanoseconds that are not (a trace cut before it, as Kineto writes it after the
    events) stay relative to an unknown origin: clock `kineto_relative`, and a `clock` row says so."""
    low, high, events = con.execute("SELECT min(start_ns), max(start_ns), count(*) FROM events").fetchall()[0]
    if array.base_problem and (high is None or low >= _RELATIVE_NS or high >= _RELATIVE_NS):
        warn(f"{path}: {array.base_problem}; it is not added to the times, which are Unix-epoch times as they are",
             check="clock", action="kept", rows=events, path=path, offset=array.array_offset)
    if array.base_ns and high is not None and low - array.base_ns >= _RELATIVE_NS:
        warn(f"{path}: its times are Unix-epoch times already, yet the trace has baseTimeNanoseconds "
             f"{array.base_ns}, which is added to them as Kineto's format says (they end up {high} ns since the "
             "epoch): kept", check="clock", action="kept", rows=events, path=path, offset=array.array_offset)
    if high is None or array.base_ns or low >= _RELATIVE_NS or high >= _RELATIVE_NS:
        return "unix_epoch"
    why = array.base_problem or ("it is lost with the cut (Kineto writes it after the events)"
                                 if array.truncated_at is not None or array.gzip_cut_short or array.trailer_cut
                                 else "the trace has none")
    warn(f"{path}: no usable baseTimeNanoseconds ({why}) and its times ({low} to {high} ns) are not Unix-epoch times: "
         "they stay relative to an unknown origin (clock kineto_relative) and cannot be aligned with other sources",
         check="clock", action="kept", rows=events, path=path,
         offset=array.truncated_at if array.truncated_at is not None else array.size,
         tables="host_op,host_api,device_exec,step_point,memory_event")
    return "kineto_relative"


#: Host ops and runtime calls of every thread in nesting order (ops before calls at the same start), for
#: nesting.nest. The calls are only needed where device activities have no op by their External id.
_NESTING_SQL = """
SELECT is_call, id, thread, start_ns, end_ns FROM (
    SELECT false AS is_call, op_index AS id, thread, start_ns, start_ns + dur_ns AS end_ns, op_index AS tie FROM host_ops
    UNION ALL
    SELECT true, correlation, thread, start_ns, start_ns + dur_ns, NULL FROM calls
    WHERE EXISTS (SELECT 1 FROM device ANTI JOIN by_external_id USING (row_id) WHERE correlation IS NOT NULL))
ORDER BY thread, start_ns, end_ns DESC, is_call, tie
"""


def _load_events(con: duckdb.DuckDBPyConnection, path: Path, scratch: Path, warn: Warn,
                 frames: bool = True) -> TraceArray:
    """Table `events` from the trace's event array (its Python frames only with `frames`); the TraceArray says what
    the copy learnt.

    Two faults DuckDB's reader refuses are recovered, each with a warning: invalid UTF-8 (the array
    is copied again with those bytes read as U+FFFD) and an event that repeats a key (the first
    value is read, as DuckDB's reader does when told to go on). Anything else is an InputError.
    Start times with ns fractions that the first events did not announce (larger than a double holds
    exactly, or epoch µs of other digits than the split expected) are read again, quoted
    (trace_object.EXACT_DOUBLE_US).
    """
    sanitize = tolerant = quote = False
    while True:
        with event_array(path, scratch, sanitize=sanitize, quote=quote) as array:
            _base_ns(array)
            try:
                con.execute("CREATE OR REPLACE TABLE events AS " + _EVENTS_SQL,
                            {"path": str(array.path), "base_ns": array.base_ns or 0, "limit": TIME_LIMIT_NS,
                             "tolerant": bool(tolerant), "exact_us": EXACT_DOUBLE_US, "frames": frames})
                inexact, faulty = con.execute("SELECT bool_or(inexact_time), bool_or(fault IS NOT NULL) "
                                              "FROM events").fetchall()[0]
                if array.times != "quoted" and inexact:
                    quote = True
                    continue
                if faulty:
                    array.fault_offsets = _fault_offsets(con, array, bool(tolerant))
                if array.replaced:
                    warn(f"{path}: {array.replaced} byte sequences that are not UTF-8 are read as U+FFFD",
                         check="bad_encoding", action="repaired", rows=array.replaced, path=path)
                if tolerant:
                    _count_unreadable(con, path, array, warn, tolerant)
                return array
            except duckdb.Error as exc:
                message = re.sub(r' in file "[^"]*"', "", first_line_of(exc))
                if not sanitize and "invalid UTF-8" in message:
                    sanitize = True
                elif not tolerant and ("duplicate key" in message or "Expected OBJECT" in message):
                    tolerant = message.split(": ", 1)[-1]
                else:
                    raise _parse_error(path, array, message) from None


def _fault_offsets(con: duckdb.DuckDBPyConnection, array: TraceArray, tolerant: bool) -> dict[str, int]:
    """Per kind of fault (_FAULTS), the file offset of the first event that has it, where the copy holds the
    file's bytes and is small enough to walk (trace_object.event_offset); read again with its position."""
    if not array.exact_copy:
        return {}
    first = con.execute("""
        SELECT kind, min(ordinal) FROM (
            SELECT ordinal, CASE
                WHEN name IS NULL THEN 'name'
                WHEN ph = 'X' AND cat IS NULL THEN 'cat'
                WHEN try_cast(ts AS DOUBLE) IS NULL THEN 'ts'
                WHEN ph = 'X' AND try_cast(dur AS DOUBLE) IS NULL THEN 'dur'
                WHEN NOT isfinite(try_cast(ts AS DOUBLE)) OR (ph = 'X' AND NOT isfinite(try_cast(dur AS DOUBLE)))
                     THEN 'non_finite'
                WHEN abs(try_cast(ts AS DOUBLE) * 1000 + $base_ns) >= $limit
                     OR (ph = 'X' AND abs(try_cast(dur AS DOUBLE) * 1000) >= $limit) THEN 'out_of_range'
                WHEN ph = 'X' AND try_cast(dur AS DOUBLE) < 0 THEN 'negative_duration'
                WHEN ph = 'i' AND try_cast(json_extract_string(args, '$.Bytes') AS BIGINT) IS NULL THEN 'bytes'
                END AS kind
            FROM (SELECT row_number() OVER () AS ordinal, *
                  FROM read_json($path, format = 'array', columns = __COLUMNS__, ignore_errors = $tolerant))
            WHERE ph = 'X' OR (ph = 'i' AND name = '[memory]'))
        WHERE kind IS NOT NULL GROUP BY kind""".replace("__COLUMNS__", _COLUMNS),
        {"path": str(array.path), "base_ns": array.base_ns or 0, "limit": TIME_LIMIT_NS,
         "tolerant": tolerant}).fetchall()
    offsets = {}
    for kind, ordinal in first:
        start = event_offset(array.path, ordinal)
        if start is not None:
            offsets[kind] = array.array_offset + start
    return offsets


def _count_unreadable(con: duckdb.DuckDBPyConnection, path: Path, array: TraceArray, warn: Warn,
                      first_problem: str) -> None:
    """Read with ignore_errors (an event that repeats a key, or an element that is not an object): count the
    elements that are not objects (left out) and say that a repeated key keeps its first value."""
    not_objects = con.execute(
        "SELECT count(*) FROM read_json($path, format = 'array', columns = {'ph': 'VARCHAR', 'name': 'VARCHAR', "
        "'ts': 'VARCHAR', 'cat': 'VARCHAR', 'args': 'JSON'}, ignore_errors = true) "
        "WHERE ph IS NULL AND name IS NULL AND ts IS NULL AND cat IS NULL AND args IS NULL",
        {"path": str(array.path)}).fetchall()[0][0]
    if not_objects:
        warn(f"{path}: {not_objects} elements of traceEvents are not event objects ({first_problem}); left out",
             check="malformed_record", action="dropped", rows=not_objects, path=path)
    if "duplicate key" in first_problem:
        warn(f"{path}: an event repeats a key ({first_problem}); the first value of a repeated key is read",
             check="malformed_record", action="repaired", rows=1, path=path)


def _parse_error(path: Path, array: TraceArray, message: str) -> InputError:
    """The InputError of an event array DuckDB cannot parse: the event (by number) and, where the copy is the
    file's bytes, its byte offset in the file."""
    match = re.search(r"at byte (\d+) in record/value (\d+)", message)
    offset = None
    if match:
        start = event_offset(array.path, int(match[2]))
        if start is not None and array.exact_copy:
            offset = array.array_offset + start + int(match[1])
    return InputError(path, f"not a Kineto trace: its events cannot be parsed ({message})", offset=offset)


def _base_ns(array: TraceArray) -> None:
    """array.base_ns: baseTimeNanoseconds when it is an integer of ns in range, else None (base_problem says
    why, where the trace has one)."""
    base = array.metadata.get("baseTimeNanoseconds")
    array.base_ns = array.base_problem = None
    if base is None:
        return
    if isinstance(base, bool) or not isinstance(base, int) or not 0 <= base < TIME_LIMIT_NS:
        array.base_problem = f"baseTimeNanoseconds is {str(base)[:40]!r}, not ns since the Unix epoch"
        return
    array.base_ns = base


def _run_info(source: Source, metadata: dict, has_device: bool, clock: str, path: Path, warn: Warn) -> pa.Table:
    """Paddle's exporter says so by its string schemaVersion ("1.0.1") and its span_indx / ExtraInfo members.
    A member that cannot be written as JSON (NaN, nested too deeply) is left out of metadata_json, with a row."""
    paddle = isinstance(metadata.get("schemaVersion"), str) or "span_indx" in metadata or "ExtraInfo" in metadata
    kept = {}
    for key in _METADATA_KEYS:
        if key in metadata:
            try:
                kept[key] = json.loads(json.dumps(metadata[key], allow_nan=False))
            except (ValueError, RecursionError):
                warn(f"{path}: member {key} holds NaN, infinity or too deep a nesting; left out of run_info.metadata_json",
                     check="non_finite", action="dropped", rows=1, path=path)
    return run_info(source, device_type="gpu" if has_device else "cpu", framework="paddle" if paddle else "pytorch",
                    layout="kineto", metadata_json=json.dumps(kept),
                    **kineto_clock(relative=clock == "kineto_relative"))
