SELECT
    rank,
    capture,
    metric,
    any_value(mode ORDER BY seq) AS mode,
    unit,
    count(*) AS samples,
    min(min_value) AS min_value,
    max(max_value) AS max_value,
    avg(avg_value) AS avg_value
FROM {{ ref('stg_pcie_bandwidth') }}
GROUP BY rank, capture, metric, unit
