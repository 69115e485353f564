SELECT
    rank,
    capture,
    kind,
    component,
    device,
    count(*) AS samples,
    min(ts_ns) AS first_ts_ns,
    max(ts_ns) AS last_ts_ns,
    max(allocated_bytes) AS peak_allocated_bytes,
    min(ts_ns) FILTER (WHERE allocated_bytes = peak_allocated_bytes) AS peak_allocated_ts_ns,
    max(reserved_bytes) AS peak_reserved_bytes,
    min(ts_ns) FILTER (WHERE reserved_bytes = peak_reserved_bytes) AS peak_reserved_ts_ns,
    max(active_bytes) AS peak_active_bytes,
    arg_max(allocated_bytes, (ts_ns, seq)) AS end_allocated_bytes,
    arg_max(reserved_bytes, (ts_ns, seq)) AS end_reserved_bytes
FROM (SELECT *, max(allocated_bytes) OVER c AS peak_allocated_bytes, max(reserved_bytes) OVER c AS peak_reserved_bytes
      FROM {{ ref('memory_curve') }}
      WINDOW c AS (PARTITION BY rank, capture, kind, component, device))
GROUP BY rank, capture, kind, component, device
