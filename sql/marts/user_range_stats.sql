-- User ranges per name: the MSTX / msproftx markers of msprof data, the NVTX ranges of Nsight Systems exports and
-- the record_function annotations of PyTorch traces, summed as `nsys stats` sums NVTX ranges (nvtx_sum):
-- per-instance durations, nested or overlapping instances counted in full.
SELECT
    rank,
    side,
    category,
    op_name AS name,
    unnest(duration_stats(dur_ns)),
    count(*) FILTER (WHERE dur_ns = 0) AS marks,
    sum(dur_ns) / nullif(sum(sum(dur_ns)) OVER (PARTITION BY rank, side), 0) AS share,
    min(start_ns) AS first_start_ns
FROM {{ ref('stg_host_op') }}
WHERE category IN ('marker', 'nvtx', 'user_annotation', 'dataloader', 'forward', 'backward', 'optimizer')
GROUP BY rank, side, category, op_name
