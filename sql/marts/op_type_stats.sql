-- op_type_stats: one row per op type (rank, side, op_type): executions, instances and time.
-- Columns:
--   rank, side, op_type.
--   instances: distinct op instances (full names) of the type.  occurrences: executions of all of them.
--   steps: steps of the rank: counted from the step trace when there is one, else the most common
--     execution count of the rank's op instances (an op that runs once a step runs `steps` times).
--   executions_per_step: occurrences // steps (integer, as MindSpore's execution_frequency(per-step)).
--   total_ns, avg_ns (total / occurrences), min_ns, max_ns [ns].
--   share: total_ns / the summed total_ns of all types of the same rank and side (fraction 0-1).
WITH step_trace_steps AS (
    SELECT rank, count(*) AS steps FROM stg_step WHERE end_ns IS NOT NULL GROUP BY rank
), occurrence_counts AS (
    SELECT rank, side, occurrences, count(*) AS instances
    FROM op_detail_stats GROUP BY rank, side, occurrences
), modal_steps AS (
    SELECT rank, side, first(occurrences ORDER BY instances DESC, occurrences DESC) AS steps
    FROM occurrence_counts GROUP BY rank, side
), per_type AS (
    SELECT rank, side, op_type,
           count(*) AS instances,
           sum(occurrences)::BIGINT AS occurrences,
           sum(total_ns)::BIGINT AS total_ns,
           min(min_ns) AS min_ns,
           max(max_ns) AS max_ns
    FROM op_detail_stats
    GROUP BY rank, side, op_type
)
SELECT
    t.rank, t.side, t.op_type, t.instances, t.occurrences,
    coalesce(s.steps, m.steps) AS steps,
    t.occurrences // coalesce(s.steps, m.steps) AS executions_per_step,
    t.total_ns,
    t.total_ns / t.occurrences AS avg_ns,
    t.min_ns,
    t.max_ns,
    t.total_ns / nullif(sum(t.total_ns) OVER (PARTITION BY t.rank, t.side), 0) AS share
FROM per_type t
JOIN modal_steps m USING (rank, side)
LEFT JOIN step_trace_steps s USING (rank)
