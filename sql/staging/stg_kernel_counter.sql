SELECT
    rank,
    capture,
    range_index,
    kernel_name,
    start_ns,
    dur_ns,
    launch_correlation,
    counter,
    value
FROM {{ source('kernel_counter') }}
