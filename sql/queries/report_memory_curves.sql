-- Report, memory page: the memory curves of each rank (memory_curve; host_memory_curve as kind 'host'), MiB over
-- seconds since the curve's first sample; at most $max_points samples per curve, every n-th one plus the sample
-- where the curve peaks, so the peak is always drawn. A curve that never leaves 0 (most modules of msprof's
-- npu_module_mem) is left out; the peaks table lists it.
WITH samples AS (
    SELECT rank, capture, kind, component, coalesce(device, '') AS device, ts_ns, seq,
           coalesce(reserved_bytes, allocated_bytes) AS bytes
    FROM memory_curve
    UNION ALL
    SELECT rank, capture, 'host', 'host (resident)', '', ts_ns, sample, memory_bytes FROM host_memory_curve
), numbered AS (
    SELECT *, row_number() OVER w AS n, count(*) OVER (PARTITION BY rank, capture, kind, component, device) AS total,
           bytes = max(bytes) OVER (PARTITION BY rank, capture, kind, component, device) AS is_peak,
           min(ts_ns) OVER (PARTITION BY rank, capture, kind, component, device) AS first_ns
    FROM samples
    WINDOW w AS (PARTITION BY rank, capture, kind, component, device ORDER BY ts_ns, seq)
)
SELECT rank, capture, kind, component, device,
       list((ts_ns - first_ns) / 1e9 ORDER BY ts_ns, seq) AS seconds,
       list(bytes / 1048576 ORDER BY ts_ns, seq) AS mib
FROM numbered
WHERE bytes IS NOT NULL AND ((n - 1) % greatest(1, ceil(total / $max_points))::BIGINT = 0 OR is_peak)
GROUP BY rank, capture, kind, component, device
HAVING bool_or(bytes > 0)
ORDER BY rank, capture, kind, component, device
