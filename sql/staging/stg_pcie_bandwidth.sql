SELECT
    rank,
    capture,
    seq,
    mode,
    metric,
    unit,
    min_value,
    max_value,
    avg_value
FROM {{ source('pcie_bandwidth') }}
