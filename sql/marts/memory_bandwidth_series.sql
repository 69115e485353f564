-- The bandwidth of memcpy and memset executions over time, per rank, capture and direction (HtoD, DtoH, DtoD,
-- memset, ...), as HolisticTraceAnalysis' get_memory_bw_time_series defines it: each copy moves bytes / duration
-- over its interval [start, end), concurrent copies of a direction add up, the series steps at every start and
-- end. Unlike HTA: exact ns times (HTA rounds to whole µs), equal times merged into one point (HTA keeps one
-- point per start and per end, in an unspecified order), copies of no duration or no byte count left out (HTA
-- stretches a 0 µs copy to 1 µs), and the value is exactly 0 where no copy is open (a running double sum can
-- leave a residue). One row per time a copy of the direction starts or ends.
WITH copies AS (
    SELECT rank, capture, memory_op_direction(kind, name) AS direction, start_ns, start_ns + dur_ns AS end_ns,
           bytes * 1e9 / dur_ns AS bytes_per_second
    FROM {{ ref('stg_device_exec') }}
    WHERE kind IN ('memcpy', 'memset') AND dur_ns > 0 AND bytes IS NOT NULL
), changes AS (
    SELECT rank, capture, direction, start_ns AS ts_ns, bytes_per_second AS delta, 1 AS opened FROM copies
    UNION ALL
    SELECT rank, capture, direction, end_ns, -bytes_per_second, -1 FROM copies
), points AS (
    SELECT rank, capture, direction, ts_ns, sum(delta) AS delta, sum(opened)::BIGINT AS opened
    FROM changes GROUP BY ALL
), running AS (
    SELECT rank, capture, direction, ts_ns,
           sum(opened) OVER w AS active_copies,
           sum(delta) OVER w AS running_bytes_per_second
    FROM points
    WINDOW w AS (PARTITION BY rank, capture, direction ORDER BY ts_ns ROWS UNBOUNDED PRECEDING)
)
SELECT rank, capture, direction, ts_ns,
       active_copies::BIGINT AS active_copies,
       CASE WHEN active_copies = 0 THEN 0.0 ELSE greatest(running_bytes_per_second, 0.0) END AS bytes_per_second,
       lead(ts_ns) OVER (PARTITION BY rank, capture, direction ORDER BY ts_ns) - ts_ns AS held_ns
FROM running
