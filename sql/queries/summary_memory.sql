-- reports/summary.json (profpipe/export/summary.py): rank $rank's allocator figures per device (memory_stats).
SELECT device_type, device_id, allocations, frees, peak_in_use_bytes, peak_reserved_bytes, in_use_from_trace_start
FROM memory_stats
WHERE rank = $rank
ORDER BY device_type, device_id
