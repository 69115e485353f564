-- profpipe diff (profpipe/diff.py): one run's per-step samples, over its public tables (profile.duckdb or a
-- warehouse run): one row per (kind, key, rank, capture, step) with the time and number of executions of
-- that key in that step, and the sum of the executions' squared times (time_squares, ns^2 as DOUBLE: diff's
-- samples 'executions', for a cycle without steps, test the executions' times). kind 'kernel': device executions (kernels, memcpy, memset, Ascend tasks) by name;
-- 'op_type': framework op executions (host_op: MindSpore's op timings, PyTorch/Paddle CPU ops, NVTX ranges)
-- by op type, their own durations, the step spans themselves (ProfilerStep#N, ProfileStep#N) left out;
-- 'step_phase': the phases of step_phases (total, iteration_interval, fp_and_bp, tail), one each per step.
-- An execution belongs to the step whose window [start_ns, end_ns) holds its launch (the runtime call with
-- its correlation id, as step_gpu_time places it; else its start); executions of a cycle with a step trace
-- outside every window are left out. A cycle (rank, capture) without steps is one sample, step NULL.
WITH steps AS (
    SELECT rank, capture, step, start_ns, end_ns, total_ns, iteration_interval_ns, fp_and_bp_ns, tail_ns
    FROM step_phases
), device AS (
    SELECT 'kernel' AS kind, d.name AS key, d.rank, d.capture, d.dur_ns,
           coalesce(a.start_ns, d.start_ns) AS placed_ns
    FROM (SELECT * FROM stg_device_exec WHERE dur_ns IS NOT NULL) d
    ASOF LEFT JOIN stg_host_api a
        ON a.rank = d.rank AND a.capture = d.capture AND a.correlation = d.correlation AND d.start_ns >= a.start_ns
), ops AS (
    SELECT 'op_type' AS kind, op_type AS key, rank, capture, dur_ns, start_ns AS placed_ns
    FROM stg_host_op
    WHERE dur_ns IS NOT NULL AND NOT regexp_matches(op_name, '^Profiler?Step#[0-9]+$')
), placed AS (
    SELECT t.kind, t.key, t.rank, t.capture, s.step, t.dur_ns, t.placed_ns < s.end_ns AS in_step
    FROM (SELECT * FROM device UNION ALL SELECT * FROM ops) t
    ASOF LEFT JOIN steps s ON s.rank = t.rank AND s.capture = t.capture AND t.placed_ns >= s.start_ns
)
SELECT kind, key, rank, capture, step, sum(dur_ns)::BIGINT AS time_ns, count(*) AS count,
       sum(dur_ns::DOUBLE * dur_ns) AS time_squares
FROM placed
WHERE in_step OR (rank, capture) NOT IN (SELECT (rank, capture) FROM steps)
GROUP BY kind, key, rank, capture, step
UNION ALL
SELECT 'step_phase', phase.key, rank, capture, step, phase.time_ns, 1, phase.time_ns::DOUBLE * phase.time_ns
FROM steps, unnest([{'key': 'total', 'time_ns': total_ns},
                    {'key': 'iteration_interval', 'time_ns': iteration_interval_ns},
                    {'key': 'fp_and_bp', 'time_ns': fp_and_bp_ns},
                    {'key': 'tail', 'time_ns': tail_ns}]) AS t(phase)
WHERE phase.time_ns IS NOT NULL
