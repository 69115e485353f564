WITH peaks AS (
    SELECT *, max(in_use_bytes) OVER (PARTITION BY rank, capture, device_type, device_id) AS peak_in_use_bytes
    FROM {{ ref('int_memory_in_use') }}
)
SELECT
    rank,
    capture,
    device_type,
    device_id,
    count(*) FILTER (WHERE bytes > 0) AS allocations,
    count(*) FILTER (WHERE bytes < 0) AS frees,
    coalesce(sum(bytes) FILTER (WHERE bytes > 0), 0)::BIGINT AS allocated_bytes,
    coalesce(-sum(bytes) FILTER (WHERE bytes < 0), 0)::BIGINT AS freed_bytes,
    max(peak_in_use_bytes)::BIGINT AS peak_in_use_bytes,
    min(ts_ns) FILTER (WHERE in_use_bytes = peak_in_use_bytes) AS peak_ts_ns,
    arg_max(in_use_bytes, (ts_ns, seq))::BIGINT AS end_in_use_bytes,
    max(total_reserved) AS peak_reserved_bytes,
    bool_or(total_allocated IS NULL) AS in_use_from_trace_start
FROM peaks
GROUP BY rank, capture, device_type, device_id
