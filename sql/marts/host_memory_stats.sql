WITH ranked AS (
    SELECT *, row_number() OVER (PARTITION BY rank, capture ORDER BY memory_bytes DESC, sample) AS peak_order,
           first_value(memory_bytes) OVER (PARTITION BY rank, capture ORDER BY sample) AS first_bytes,
           last_value(memory_bytes) OVER (PARTITION BY rank, capture ORDER BY sample
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS last_bytes
    FROM {{ ref('host_memory_curve') }}
)
SELECT rank, capture, count(*) AS samples,
       max(memory_bytes) AS peak_bytes,
       any_value(ts_ns) FILTER (WHERE peak_order = 1) AS peak_ts_ns,
       any_value(event || '::' || stage) FILTER (WHERE peak_order = 1) AS peak_at,
       any_value(line) FILTER (WHERE peak_order = 1) AS peak_line,
       min(memory_bytes) AS min_bytes, avg(memory_bytes) AS avg_bytes,
       any_value(first_bytes) AS first_bytes, any_value(last_bytes) AS last_bytes,
       any_value(last_bytes) - any_value(first_bytes) AS growth_bytes,
       min(ts_ns) AS first_ts_ns, max(ts_ns) AS last_ts_ns
FROM ranked
GROUP BY rank, capture
