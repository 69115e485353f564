WITH points AS (
    SELECT rank, capture, step, stream_id, tag, op_name, ts_ns,
           row_number() OVER (PARTITION BY rank, capture, step, stream_id ORDER BY seq) - 1 AS position,
           count(*) OVER (PARTITION BY rank, capture, step, stream_id) AS points_in_stream
    FROM {{ ref('stg_step_point') }}
    WHERE kind IN ('comm_start', 'comm_end')
)
SELECT
    rank,
    capture,
    step,
    stream_id,
    position // 2 AS pair,
    min(ts_ns) FILTER (WHERE position % 2 = 0) AS start_ns,
    max(ts_ns) FILTER (WHERE position % 2 = 1) AS end_ns,
    max(ts_ns) FILTER (WHERE position % 2 = 1) - min(ts_ns) FILTER (WHERE position % 2 = 0) AS dur_ns,
    min(tag) FILTER (WHERE position % 2 = 0) AS start_tag,
    max(tag) FILTER (WHERE position % 2 = 1) AS end_tag,
    coalesce(max(op_name) FILTER (WHERE position % 2 = 0), max(op_name) FILTER (WHERE position % 2 = 1)) AS op_name,
    coalesce(op_short_name(coalesce(max(op_name) FILTER (WHERE position % 2 = 0),
                                    max(op_name) FILTER (WHERE position % 2 = 1))), 'parallel') AS op_label
FROM points
WHERE points_in_stream % 2 = 0
GROUP BY rank, capture, step, stream_id, position // 2
