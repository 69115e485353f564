-- MindSpore's summary dict in its GiB (bytes / 2^30: exact, as MindSpore's float sums of aligned sizes are)
SELECT
    rank,
    capture,
    graphs,
    coalesce(capacity_bytes, 0) / 1073741824.0 AS capacity,
    allocations,
    deallocations,
    peak_bytes / 1073741824.0 AS peak_mem,
    static_bytes / 1073741824.0 AS static_mem
FROM {{ ref('memory_usage_summary') }}
