WITH executions AS (
    SELECT rank, capture, op_name, iteration, arg_min(start_ns, seq) AS first_ns, max(plane) AS main_plane
    FROM {{ ref('stg_comm_task') }}
    GROUP BY rank, capture, op_name, iteration
), steps AS (
    SELECT rank, capture, step, start_ns, end_ns FROM {{ ref('int_step') }} WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL
), step_range AS (
    SELECT rank, capture, min(step) AS first_step, max(step) AS last_step, min(start_ns) AS first_start
    FROM steps GROUP BY rank, capture
), placed AS (
    SELECT e.rank, e.capture, e.op_name, e.iteration, e.main_plane,
           coalesce((SELECT max(s.step) FROM steps s
                     WHERE s.rank = e.rank AND s.capture = e.capture AND e.first_ns >= s.start_ns AND e.first_ns < s.end_ns),
                    CASE WHEN e.first_ns < r.first_start THEN r.first_step ELSE r.last_step END) AS step
    FROM executions e LEFT JOIN step_range r USING (rank, capture)
), op_order AS (
    SELECT rank, capture, op_name, lower(any_value(op_type)) AS type,
           row_number() OVER (PARTITION BY rank, capture, lower(any_value(op_type))
                              ORDER BY any_value(op_ordinal), op_name) AS k
    FROM {{ ref('stg_comm_task') }}
    GROUP BY rank, capture, op_name
), column_order AS (
    SELECT rank, capture, 'stream_' || stream_id || '_' || pair || '_' || op_label AS column_name,
           lower(split_part(op_label, '-', 1)) AS type,
           row_number() OVER (PARTITION BY rank, capture, lower(split_part(op_label, '-', 1)) ORDER BY stream_id, pair) AS k
    FROM {{ ref('int_step_communication') }} c
    WHERE step = (SELECT min(step) FROM {{ ref('int_step_communication') }} f WHERE f.rank = c.rank AND f.capture = c.capture)
)
SELECT
    t.* REPLACE (coalesce(t.step, p.step) AS step),
    CASE WHEN t.transport = 'LOCAL'
         THEN coalesce(t.dst_rank, t.src_rank) || '-' || coalesce(t.src_rank, t.dst_rank)
         ELSE coalesce(t.src_rank, t.dst_rank) || '-' || coalesce(t.dst_rank, t.src_rank) END AS link,
    t.plane = p.main_plane AS main_plane,
    coalesce(c.column_name, t.op_name) AS op_label
FROM {{ ref('stg_comm_task') }} t
JOIN placed p USING (rank, capture, op_name, iteration)
JOIN op_order o USING (rank, capture, op_name)
LEFT JOIN column_order c ON c.rank = t.rank AND c.capture = t.capture AND c.type = o.type AND c.k = o.k
