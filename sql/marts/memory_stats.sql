-- memory_stats: one row per allocator device of a rank (rank, device_type, device_id): allocations, frees and the most memory in use at once.
-- Columns:
--   rank, device_type, device_id: as memory_event (device_id -1: host memory).
--   allocations, frees: events that allocated (bytes > 0) or freed (bytes < 0).
--   allocated_bytes, freed_bytes: bytes allocated and freed over the trace [B].
--   peak_in_use_bytes: most bytes in use at once (stg_memory_in_use) [B], and peak_ts_ns when it was first
--     reached; in_use_from_trace_start: true when the trace has no Total Allocated and in use counts from
--     its first event.
--   end_in_use_bytes: in use after the last event (same rule) [B].
--   peak_reserved_bytes: most bytes the caching allocator held reserved (NULL without Total Reserved) [B].
WITH peaks AS (
    SELECT *, max(in_use_bytes) OVER (PARTITION BY rank, device_type, device_id) AS peak_in_use_bytes
    FROM stg_memory_in_use
)
SELECT
    rank,
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
GROUP BY rank, device_type, device_id
