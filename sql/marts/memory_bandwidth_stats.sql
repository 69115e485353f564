-- HolisticTraceAnalysis' get_memory_bw_summary per rank, capture and direction: count, mean, sample standard
-- deviation, min, quartiles (linear interpolation, as pandas' describe) and max of the points of the bandwidth
-- series whose value is above 0 (one per copy where copies do not overlap; unweighted by time), in two
-- definitions:
-- * 'profpipe': over memory_bandwidth_series (exact ns, equal times merged), with the copies, their bytes, the
--   time at least one ran (busy_ns) and the time-weighted mean bandwidth over it;
-- * 'hta': HTA's own series rebuilt from int_hta_gpu_event (its µs rounding and step cut-off; a copy HTA reads as
--   0 µs long lasts 1 µs, one read as -1 µs ends before it starts), one point per start and per end (ends
--   before starts at equal times), its GB/s (bytes / duration in ns, Kineto's "memory bandwidth (GB/s)") summed
--   as doubles in that order, so that these rows give HTA's numbers.
WITH series AS (
    SELECT rank, capture, direction, bytes_per_second AS value FROM {{ ref('memory_bandwidth_series') }}
    WHERE bytes_per_second > 0
), copies AS (
    SELECT rank, capture, memory_op_direction(kind, name) AS direction,
           count(*) AS copies, sum(bytes)::BIGINT AS total_bytes
    FROM {{ ref('stg_device_exec') }}
    WHERE kind IN ('memcpy', 'memset') AND dur_ns > 0 AND bytes IS NOT NULL
    GROUP BY ALL
), busy AS (
    SELECT rank, capture, direction, sum(held_ns)::BIGINT AS busy_ns
    FROM {{ ref('memory_bandwidth_series') }} WHERE active_copies > 0 GROUP BY ALL
), profpipe AS (
    SELECT rank, capture, direction, 'profpipe' AS definition, c.copies, c.total_bytes, b.busy_ns,
           c.total_bytes * 1e9 / nullif(b.busy_ns, 0) AS busy_avg_bytes_per_second,
           s.points, s.mean_bytes_per_second, s.stddev_bytes_per_second, s.min_bytes_per_second,
           s.p25_bytes_per_second, s.median_bytes_per_second, s.p75_bytes_per_second, s.max_bytes_per_second
    FROM copies c
    JOIN busy b USING (rank, capture, direction)
    LEFT JOIN (
        SELECT rank, capture, direction, count(*) AS points, avg(value) AS mean_bytes_per_second,
               stddev_samp(value) AS stddev_bytes_per_second, min(value) AS min_bytes_per_second,
               quantile_cont(value, 0.25) AS p25_bytes_per_second, quantile_cont(value, 0.5) AS median_bytes_per_second,
               quantile_cont(value, 0.75) AS p75_bytes_per_second, max(value) AS max_bytes_per_second
        FROM series GROUP BY ALL
    ) s USING (rank, capture, direction)
), hta_copies AS (  -- the copies HTA keeps, their bytes / exact duration in ns: Kineto's GB/s
    SELECT h.rank, h.capture,
           CASE WHEN starts_with(h.name, 'Memset') THEN 'memset'
                WHEN starts_with(h.name, 'Memcpy') AND length(h.name) >= 11 THEN substr(h.name, 8, 4)
                ELSE 'unknown' END AS direction,
           h.start_ns,
           CASE WHEN h.end_ns = h.start_ns THEN h.start_ns + 1000 ELSE h.end_ns END AS end_ns,
           h.bytes, h.bytes / h.exact_dur_ns AS gbps
    FROM {{ ref('int_hta_gpu_event') }} h
    WHERE h.hta_type = 'memory' AND h.exact_dur_ns > 0 AND h.bytes IS NOT NULL
), hta_points AS (
    SELECT rank, capture, direction, ts_ns, delta,
           sum(delta) OVER (PARTITION BY rank, capture, direction ORDER BY ts_ns, delta, seq
                            ROWS UNBOUNDED PRECEDING) AS gbps
    FROM (SELECT rank, capture, direction, start_ns AS ts_ns, gbps AS delta,
                 row_number() OVER (ORDER BY rank, capture, direction, start_ns, end_ns, gbps) AS seq FROM hta_copies
          UNION ALL
          SELECT rank, capture, direction, end_ns, -gbps,
                 row_number() OVER (ORDER BY rank, capture, direction, start_ns, end_ns, gbps) FROM hta_copies)
), hta AS (
    SELECT rank, capture, direction, 'hta' AS definition, c.copies, c.total_bytes, NULL::BIGINT AS busy_ns,
           NULL::DOUBLE AS busy_avg_bytes_per_second,
           s.points, s.mean_bytes_per_second, s.stddev_bytes_per_second, s.min_bytes_per_second,
           s.p25_bytes_per_second, s.median_bytes_per_second, s.p75_bytes_per_second, s.max_bytes_per_second
    FROM (SELECT rank, capture, direction, count(*) AS copies, sum(bytes)::BIGINT AS total_bytes
          FROM hta_copies GROUP BY ALL) c
    LEFT JOIN (
        SELECT rank, capture, direction, count(*) AS points, avg(gbps) * 1e9 AS mean_bytes_per_second,
               stddev_samp(gbps) * 1e9 AS stddev_bytes_per_second, min(gbps) * 1e9 AS min_bytes_per_second,
               quantile_cont(gbps, 0.25) * 1e9 AS p25_bytes_per_second, quantile_cont(gbps, 0.5) * 1e9 AS median_bytes_per_second,
               quantile_cont(gbps, 0.75) * 1e9 AS p75_bytes_per_second, max(gbps) * 1e9 AS max_bytes_per_second
        FROM hta_points WHERE gbps > 0 GROUP BY ALL
    ) s USING (rank, capture, direction)
)
SELECT * FROM profpipe
UNION ALL
SELECT * FROM hta
