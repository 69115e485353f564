WITH step_trace_steps AS (
    SELECT rank, count(*) AS steps FROM {{ ref('int_step') }} WHERE end_ns IS NOT NULL GROUP BY rank
), occurrence_counts AS (
    SELECT rank, side, occurrences, count(*) AS instances
    FROM {{ ref('op_detail_stats') }} GROUP BY rank, side, occurrences
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
    FROM {{ ref('op_detail_stats') }}
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
