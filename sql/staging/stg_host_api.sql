SELECT
    rank,
    capture,
    tid,
    name,
    category,
    correlation,
    external_id,
    start_ns,
    dur_ns
FROM {{ source('host_api') }}
