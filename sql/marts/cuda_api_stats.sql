-- nsys cuda_api_sum, per rank: CUDA runtime and driver calls grouped by API name, the name without a
-- trailing 6-character version suffix "_v" + 4 digits (cudaLaunchKernel_v7000 -> cudaLaunchKernel).
WITH calls AS (
    SELECT rank, category, dur_ns,
           CASE WHEN regexp_matches(name, '_v[0-9]{4}$') THEN left(name, length(name) - 6) ELSE name END AS name
    FROM {{ ref('stg_host_api') }}
    WHERE category IN ('cuda_runtime', 'cuda_driver')
), stats AS (
    SELECT rank, name, category, duration_stats(dur_ns) AS s
    FROM calls
    GROUP BY rank, name, category
)
SELECT
    rank,
    name,
    category,
    s.total_ns / nullif(sum(s.total_ns) OVER (PARTITION BY rank), 0) AS time_share,
    s.total_ns,
    s.instances AS calls,
    s.avg_ns,
    s.median_ns,
    s.min_ns,
    s.max_ns,
    s.stddev_ns
FROM stats
