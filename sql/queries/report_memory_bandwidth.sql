-- Report, memory page: the bandwidth of memcpy and memset per rank and direction (memory_bandwidth_series), GB/s
-- over seconds since the rank's first copy; at most $max_points change points per direction, every n-th one plus
-- the one where the bandwidth peaks, so the peak is always drawn.
WITH numbered AS (
    SELECT *, row_number() OVER w AS n, count(*) OVER (PARTITION BY rank, capture, direction) AS total,
           bytes_per_second = max(bytes_per_second) OVER (PARTITION BY rank, capture, direction) AS is_peak,
           min(ts_ns) OVER (PARTITION BY rank, capture) AS first_ns
    FROM memory_bandwidth_series
    WINDOW w AS (PARTITION BY rank, capture, direction ORDER BY ts_ns)
)
SELECT rank, capture, direction,
       list((ts_ns - first_ns) / 1e9 ORDER BY ts_ns) AS seconds,
       list(bytes_per_second / 1e9 ORDER BY ts_ns) AS gb_per_second
FROM numbered
WHERE (n - 1) % greatest(1, ceil(total / $max_points))::BIGINT = 0 OR is_peak OR n = total
GROUP BY rank, capture, direction
ORDER BY rank, capture, direction
