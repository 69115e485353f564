SELECT
    rank,
    capture,
    bottom_level_op,
    kernel_name,
    counter,
    count(*) AS kernels,
    sum(value) AS total_value,
    avg(value) AS avg_value,
    min(value) AS min_value,
    max(value) AS max_value
FROM {{ ref('kernel_counter_op') }}
GROUP BY ALL
