-- Report, memory page: each memory curve's peak (memory_peak), MiB, and when it was first reached (seconds after the
-- curve's first sample); per rank and kind the highest peak first (the idle modules of msprof's npu_module_mem last).
SELECT rank, capture, kind, component, device, samples, peak_allocated_bytes / 1048576 AS peak_allocated_mib,
       peak_reserved_bytes / 1048576 AS peak_reserved_mib,
       (coalesce(peak_reserved_ts_ns, peak_allocated_ts_ns) - first_ts_ns) / 1e9 AS peak_at_s,
       end_reserved_bytes / 1048576 AS end_reserved_mib
FROM memory_peak
ORDER BY rank, capture, kind, coalesce(peak_reserved_bytes, peak_allocated_bytes) DESC NULLS LAST, component, device
