-- stg_memory_in_use: one row per allocator event (memory_event) with the bytes in use on its device right after it.
-- Columns:
--   every column of memory_event.
--   in_use_bytes: the allocator's Total Allocated where the trace records it; else the running sum of bytes
--     in trace order from the first event of the device (memory allocated before profiling began is then
--     not counted) [B].
SELECT
    *,
    coalesce(total_allocated, sum(bytes) OVER (PARTITION BY rank, device_type, device_id
                                               ORDER BY ts_ns, seq ROWS UNBOUNDED PRECEDING)) AS in_use_bytes
FROM memory_event
